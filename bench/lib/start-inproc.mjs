// @ts-check
// The in-process baseline as the scenarios use it: the loop of inprocess-loop.mjs in this
// process, on a scripted model and a no-op MCP server of its own.
import { startInProcessLoop } from './inprocess-loop.mjs';
import { stopProc } from './procs.mjs';
import { startMcp, startModel } from './stack.mjs';

/**
 * The in-process loop with a model and an MCP server of its own; `processes()` as a stack's.
 * @param {string} mcpTransport
 */
export async function startInproc(mcpTransport) {
  const model = await startModel();
  const mcp = await startMcp(mcpTransport);
  const loop = await startInProcessLoop({ baseURL: model.baseURL, mcp: mcp.config });
  return {
    loop,
    processes: () => [
      { name: 'model', pid: model.proc.pid },
      ...(loop.mcpPid ? [{ name: 'mcp-server (stdio)', pid: loop.mcpPid }] : []),
      ...(mcp.proc ? [{ name: 'mcp-server', pid: mcp.proc.pid }] : []),
    ],
    async stop() {
      await loop.close();
      await stopProc(model.proc);
      if (mcp.proc) await stopProc(mcp.proc);
    },
  };
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startCrmMcpServer, type CrmMcpServer } from './fixtures/crm-mcp-server.js';
import { startStack, type Stack } from './fixtures/services.js';

// Issue 16, finding 8: what a tool call becomes when its MCP server is slower than the run's
// deadline allows.

const userOf = (req: ChatRequest) => req.messages.find((m: any) => m.role === 'user')?.content as string;
const roundOf = (req: ChatRequest) => req.messages.filter((m: any) => m.role === 'assistant').length;
const lastTool = (req: ChatRequest) => String(req.messages.filter((m: any) => m.role === 'tool').at(-1)?.content);

/** Each input names the tool calls of the first round; the answer repeats what the last tool said. */
const firstRound: Record<string, Array<{ name: string; arguments: Record<string, unknown> }>> = {
  'past the deadline': [{ name: 'slow__sleep', arguments: { ms: 20_000, label: 'deadline' } }],
};
const handler: Handler = (req) => {
  const calls = firstRound[userOf(req)];
  if (!calls) return { content: `no scenario for ${userOf(req)}` };
  return roundOf(req) === 0 ? { tool_calls: calls } : { content: lastTool(req) };
};

let stack: Stack;
let slowCrm: CrmMcpServer;

beforeAll(async () => {
  slowCrm = await startCrmMcpServer();
  stack = await startStack({
    handler,
    mcpServers: {
      // The server allows a minute per call; the runs that call it have far less.
      slow: { url: slowCrm.url, timeout_ms: 60_000 },
    },
    env: { TOOL_TIMEOUT_MS: '15000' },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await slowCrm?.close();
});

async function runOf(input: string, extra: Record<string, unknown> = {}) {
  const { id } = await stack.createRun({ input, ...extra });
  const run = await stack.waitForRun(id, { timeoutMs: 50_000 });
  const steps = (await stack.getJson(`/v1/runs/${id}/steps`)).data;
  return { run, calls: steps[0].tool_calls as any[] };
}

describe("a server's timeout_ms longer than the run has left (finding 8)", () => {
  it("the call is abandoned at the run's deadline and the run ends by its timeout", async () => {
    const { run, calls } = await runOf('past the deadline', { timeout_ms: 1_500 });
    expect(calls[0], JSON.stringify(calls[0])).toMatchObject({ outcome: 'timeout', is_error: true });
    expect(calls[0].output).toBe("Error executing slow__sleep: abandoned at the run's deadline (timeout_ms)");
    expect(run.stop_reason).toBe('timeout');
    // The server was told to stop; the sleep never finished.
    await expect.poll(() => slowCrm.aborted).toContain('deadline');
    expect(slowCrm.slept.map((s) => s.label)).not.toContain('deadline');
  }, 40_000);
});

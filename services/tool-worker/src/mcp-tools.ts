import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** A tool offered to the model, named `<server>__<tool>`. */
export interface ToolDescriptor {
  name: string;
  server: string;
  tool: string;
  description: string;
  input_schema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean };
}

/** A server's tool as agentq offers it: `<server>__<tool>`, with the hints that decide reruns. */
export function describeTool(server: string, tool: Tool): ToolDescriptor {
  // Model APIs accept only [A-Za-z0-9_-] in function names; `tool` keeps the server's own name.
  const name = `${server}__${tool.name.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const descriptor: ToolDescriptor = {
    name,
    server,
    tool: tool.name,
    description: tool.description ?? tool.title ?? '',
    input_schema: tool.inputSchema as Record<string, unknown>,
  };
  const a = tool.annotations;
  if (a && (a.readOnlyHint !== undefined || a.idempotentHint !== undefined || a.destructiveHint !== undefined)) {
    descriptor.annotations = {
      ...(a.readOnlyHint !== undefined && { readOnlyHint: a.readOnlyHint }),
      ...(a.idempotentHint !== undefined && { idempotentHint: a.idempotentHint }),
      ...(a.destructiveHint !== undefined && { destructiveHint: a.destructiveHint }),
    };
  }
  return descriptor;
}

/** Every tool of a server, page by page. */
export async function listAllTools(client: Client, timeoutMs: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    // A server that repeats a cursor would otherwise page forever.
    if (cursor !== undefined && seen.has(cursor)) break;
    if (cursor !== undefined) seen.add(cursor);
  } while (cursor !== undefined);
  return tools;
}

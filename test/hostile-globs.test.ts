import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { startCrmMcpServer, type CrmMcpServer } from './fixtures/crm-mcp-server.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// Issue 16, finding 1: a caller's `tools` glob must not stall the process that matches it.
// The attack review's glob: 28 characters, thirteen stars, against tool names made long by a
// long MCP server name. Compiled to a backtracking regex, it held the event loop for ~20 s per
// model step on these names (all of the crm fixture's tools, checked at every step's offer, and
// once more by the tool-worker for a call the allowlist refuses).
const HOSTILE_GLOB = '*a'.repeat(13) + '*b';
const LONG_SERVER = 'a'.repeat(26);
const KEY_A = 'key-a-hostile-globs';
const KEY_B = 'key-b-hostile-globs';

const firstUser = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const toolMsgs = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool');
const offered = (req: ChatRequest) => (req.tools ?? []).map((t) => t.function.name as string);

let bFinished: () => void;
const bDone = new Promise<void>((resolve) => (bFinished = resolve));

const handler: Handler = async (req): Promise<Reply> => {
  const u = firstUser(req);
  if (u === 'A: hostile glob') {
    if (round(req) === 0) {
      // A's step waits for B's run to end: B must finish while A's run is in progress.
      await bDone;
      return {
        tool_calls: [
          { name: 'crm__get_contact', arguments: { id: 'c1' } },
          { name: `${LONG_SERVER}__get_contact`, arguments: { id: 'c1' } },
        ],
      };
    }
    return { content: JSON.stringify(toolMsgs(req).map((m) => m.content)) };
  }
  if (u === 'B: plain run') {
    if (round(req) === 0) return { tool_calls: [{ name: 'crm__count_calls', arguments: {} }] };
    return { content: `B done: ${toolMsgs(req)[0].content}` };
  }
  return { content: `no script for ${u}` };
};

let stack: Stack;
let longCrm: CrmMcpServer;
beforeAll(async () => {
  longCrm = await startCrmMcpServer();
  stack = await startStack({
    handler,
    env: { API_KEYS: `${KEY_A},${KEY_B}` },
    mcpServers: { [LONG_SERVER]: { url: longCrm.url } },
  });
  // The hostile glob only bites once the long names are in the catalog the offer is built from.
  await waitFor(
    async () => {
      const names = ((await stack.getJson('/v1/tools', KEY_A)).data as Array<{ name: string }>).map((t) => t.name);
      return names.includes(`${LONG_SERVER}__get_contact`) && names.includes('crm__get_contact');
    },
    { what: 'the long-named tools in the catalog', intervalMs: 50 },
  );
});
afterAll(async () => {
  await stack?.close();
  await longCrm?.close();
});

describe('a hostile tools glob', () => {
  // Deliberately below the old matcher's stall (≈ 20 s per step, three stalls for run A): with
  // it, the event loop these in-process services share is held past this timeout and the test
  // fails. Without it, both runs take well under a second.
  it("stalls nothing: another tenant's run finishes while it is processed, and its own run completes", {
    timeout: 15_000,
  }, async () => {
    const a = await stack.createRun({ input: 'A: hostile glob', tools: ['crm__*', HOSTILE_GLOB] }, KEY_A);
    const b = await stack.createRun({ input: 'B: plain run' }, KEY_B);

    const bRun = await stack.waitForRun(b.id, { key: KEY_B, timeoutMs: 15_000 });
    bFinished();
    expect(bRun).toMatchObject({ status: 'completed', output: { content: expect.stringMatching(/^B done: /) } });

    const aRun = await stack.waitForRun(a.id, { key: KEY_A, timeoutMs: 15_000 });
    expect(aRun.status).toBe('completed');
    // The glob still means what it meant: crm__* admitted, the long server's tools not.
    const aRequests = stack.llm.requests.filter((r) => firstUser(r) === 'A: hostile glob');
    for (const r of aRequests) {
      expect(offered(r)).toContain('crm__get_contact');
      expect(offered(r).filter((n) => n.startsWith(LONG_SERVER))).toEqual([]);
    }
    const [allowed, refused] = JSON.parse(aRun.output!.content as string);
    expect(JSON.parse(allowed)).toMatchObject({ id: 'c1', name: 'Bob Smith' });
    expect(refused).toMatch(/not allowed/);
    expect(longCrm.calls).toEqual([]);
  });
});

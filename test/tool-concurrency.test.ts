import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';

// TOOL_CONCURRENCY bounds the calls a tool-worker runs at once, also when a round's calls share
// one job: a round of three calls with TOOL_CONCURRENCY=2 runs two, then the third.
const toolMessages = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool');
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const handler: Handler = (req) =>
  round(req) === 0
    ? { tool_calls: [0, 1, 2].map((i) => ({ name: 'crm__sleep', arguments: { ms: 300, label: `slot-${i}` } })) }
    : {
        content: toolMessages(req)
          .map((m) => m.content)
          .join(' | '),
      };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler, env: { TOOL_CONCURRENCY: '2' } });
});
afterAll(async () => stack?.close());

describe('TOOL_CONCURRENCY', () => {
  it("bounds the calls of a round's one job: two run at once, the third once one has ended", async () => {
    const { id } = await stack.createRun({ input: 'three calls, two slots' });
    const run = await stack.waitForRun(id);
    expect(run.output?.content).toBe('slept 300 ms slot-0 | slept 300 ms slot-1 | slept 300 ms slot-2');
    expect(await stack.toolJobState(id, 0, 0)).toBe('completed');
    const starts = stack.crm.calls
      .filter((c) => String(c.args.label).startsWith('slot-'))
      .map((c) => c.at)
      .sort((a, b) => a - b);
    const ends = stack.crm.slept
      .filter((c) => c.label.startsWith('slot-'))
      .map((c) => c.at)
      .sort((a, b) => a - b);
    expect(starts).toHaveLength(3);
    // The first two overlapped; the third started only after the first of them had ended.
    expect(starts[1]).toBeLessThan(ends[0]);
    expect(starts[2]).toBeGreaterThanOrEqual(ends[0]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { runKeys } from '@agentq/shared/store';
import { monitorRedis, type MonitoredCommand } from './fixtures/redis-monitor.js';
import { startStack, type Stack } from './fixtures/services.js';

// The tool-worker holds the specs of the runs it began calls of: a run's next round begins
// without reading its spec again.

const toolMessages = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool');
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
// One round of two calls, or as many as the input asks for ("[N rounds]").
const rounds = (req: ChatRequest) =>
  Number(/\[(\d) rounds\]/.exec(String(req.messages.find((m) => m.role === 'user')?.content ?? ''))?.[1] ?? 1);
const handler: Handler = (req) =>
  round(req) < rounds(req)
    ? { tool_calls: [0, 1].map((i) => ({ name: 'crm__sleep', arguments: { ms: 1, label: `w${i}` } })) }
    : {
        content: toolMessages(req)
          .map((m) => m.content)
          .join(' | '),
      };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler });
});
afterAll(async () => stack?.close());

describe("a run's spec", () => {
  it("reads a run's spec for its first round only: the tool-worker holds it for the next", async () => {
    const seen: MonitoredCommand[] = [];
    const monitor = await monitorRedis(stack.redisUrl, (c) => {
      if (c.source !== 'lua' && /^eval/i.test(c.args[0] ?? '') && c.args.some((a) => a.startsWith('{"attempts"')))
        seen.push(c);
    });
    try {
      const { id } = await stack.createRun({ input: 'Two rounds of calls [2 rounds]' });
      expect((await stack.waitForRun(id)).output?.content).toBe(
        'slept 1 ms w0 | slept 1 ms w1 | slept 1 ms w0 | slept 1 ms w1',
      );
      // Each round's calls begin in one script; the run fields it reads are its last arguments.
      const beginOf = (depth: number) =>
        seen.filter((c) => c.args.includes(runKeys(stack.prefix, id).toolCalls(depth)));
      const [first, second] = [beginOf(0), beginOf(1)];
      expect([first.length, second.length]).toEqual([1, 1]);
      expect(first[0].args.at(-1)).toBe('spec');
      expect(second[0].args).toContain('status');
      expect(second[0].args).not.toContain('spec');
    } finally {
      monitor.close();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { Redis } from 'ioredis';
import { cellPrefix, jobId, newId, RunStore, runKeys, type JobContext } from '@agentq/shared';
import { resultsFirst } from '@agentq/tool-worker';
import { monitorRedis, type MonitoredCommand } from './fixtures/redis-monitor.js';
import { startStack, type Stack } from './fixtures/services.js';

// On one Redis the tool-worker completes a tool job without waiting for its result's write: the
// two share a connection, whose commands Redis runs in the order sent. (On a Cluster they do not
// share one, and the write is awaited; the Cluster suite runs the loop's tests there.)

const toolMessages = (req: ChatRequest) => req.messages.filter((m: any) => m.role === 'tool');
const round = (req: ChatRequest) => req.messages.filter((m: any) => m.role === 'assistant').length;
// One round of two calls, or as many as the input asks for ("[N rounds]").
const rounds = (req: ChatRequest) =>
  Number(/\[(\d) rounds\]/.exec(String(req.messages.find((m: any) => m.role === 'user')?.content ?? ''))?.[1] ?? 1);
const handler: Handler = (req) =>
  round(req) < rounds(req)
    ? { tool_calls: [0, 1].map((i) => ({ name: 'crm__sleep', arguments: { ms: 1, label: `w${i}` } })) }
    : {
        content: toolMessages(req)
          .map((m: any) => m.content)
          .join(' | '),
      };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler });
});
afterAll(async () => stack?.close());

describe('a tool result and its job', () => {
  it("writes a tool's result before its job completes, on the same connection, without waiting in between", async () => {
    // Redis runs one connection's commands in the order sent: what lets the tool-worker send the
    // job's completion (which may release the next turn) without waiting for the result's reply.
    const user = 'Two quick calls, watched';
    const seen: MonitoredCommand[] = [];
    const monitor = await monitorRedis(stack.redisUrl, (c) => {
      if (c.args.some((a) => a.includes(`${stack.prefix}:`))) seen.push(c);
    });
    try {
      const { id } = await stack.createRun({ input: user });
      expect((await stack.waitForRun(id)).output?.content).toBe('slept 1 ms w0 | slept 1 ms w1');
      // The round's two calls share one tool-round job.
      const jobKey = `${cellPrefix(stack.prefix, 0)}:tool:${jobId('toolRound', { runId: id, depth: 0, calls: [] as never })}`;
      // BullMQ's moveToFinished: sent by a client (not run inside a script), with the job's key and its return value.
      const completed = seen.findIndex(
        (c) =>
          c.source !== 'lua' &&
          c.args.includes(jobKey) &&
          c.args.includes('returnvalue') &&
          c.args.includes('completed'),
      );
      expect(completed, "the completion of the round's job").toBeGreaterThanOrEqual(0);
      // The round is one job: it adds the next step itself (BullMQ's addStandardJob into the agent
      // queue, the step's id in its packed arguments), with no flow parent to release.
      const nextStep = seen.findIndex(
        (c) =>
          c.source !== 'lua' &&
          c.args.includes(`${cellPrefix(stack.prefix, 0)}:agent:wait`) &&
          c.args.some((a) => a.includes(`${id}-t1`)),
      );
      expect(nextStep, 'the round job adding the next step').toBeGreaterThanOrEqual(0);
      for (const index of [0, 1]) {
        // The results' script, as the function the tool-worker loaded as it started: its name, not its text.
        const stored = seen.findIndex(
          (c) =>
            c.source !== 'lua' &&
            /^fcall$/i.test(c.args[0]) &&
            c.args[1]?.startsWith('agentq_complete_tool_calls_') &&
            c.args.includes(runKeys(stack.prefix, id).toolCalls(0)) &&
            c.args.includes(String(index)),
        );
        expect(stored, `the result of call ${index}`).toBeGreaterThanOrEqual(0);
        expect(completed, `the completion of the job after call ${index}'s result`).toBeGreaterThan(stored);
        expect(seen[completed].source).toBe(seen[stored].source);
        expect(nextStep, `the next step added after call ${index}'s result, on its connection`).toBeGreaterThan(stored);
        expect(seen[nextStep].source).toBe(seen[stored].source);
      }
      // The next step was told the transcript's size as the step before it read it (one round
      // trip for its input on any agent-worker).
      const conn = new Redis(stack.redisUrl);
      try {
        const stepData = JSON.parse((await conn.hget(`${cellPrefix(stack.prefix, 0)}:agent:${id}-t1`, 'data'))!);
        expect(stepData.transcriptBytes).toBe(Buffer.byteLength(JSON.stringify({ role: 'user', content: user })));
      } finally {
        conn.disconnect();
      }
      // The round's calls begin together: one script begins both (the run read once).
      const toolCallsKey = runKeys(stack.prefix, id).toolCalls(0);
      const begins = seen.filter(
        (c) =>
          c.source !== 'lua' &&
          /^eval/i.test(c.args[0]) &&
          c.args.includes(toolCallsKey) &&
          c.args.some((a) => a.startsWith('{"attempts"')),
      );
      expect(begins.length, "scripts that begin the round's calls").toBeGreaterThanOrEqual(1);
      for (const b of begins) {
        const numKeys = Number(b.args[2]);
        // ARGV: the number of calls, then index, marker, event of each.
        const argv = b.args.slice(3 + numKeys);
        expect(argv[0], 'calls begun by one script').toBe('2');
        expect([argv[1], argv[4]]).toEqual(['0', '1']);
      }
    } finally {
      monitor.close();
    }
  });

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

  it('sends the results a handler holds as it ends: what the connection sends next finds them stored', async () => {
    // Results completed together are held until the turn's promise callbacks have run; BullMQ's
    // completion of the job is sent from such callbacks. Without the flush as the handler ends,
    // the read below, sent the same way, would run before the results' script.
    const conn = new Redis(stack.redisUrl);
    try {
      const store = new RunStore({ redis: conn, prefix: stack.prefix });
      const runId = newId('run');
      await store.runs.create({
        id: runId,
        owner: 'o',
        spec: {
          model: 'm',
          max_depth: 3,
          on_budget_exhausted: 'final_answer',
          metadata: {},
          ancestors: [],
          nesting: 0,
        },
        messages: [{ role: 'user', content: 'hi' }],
      });
      const now = new Date().toISOString();
      const handler = resultsFirst(store.toolCalls, async (index: number) => {
        void store.toolCalls.complete(
          runId,
          0,
          index,
          {
            id: `call_${index}`,
            name: 't',
            status: 'completed',
            output: `out ${index}`,
            is_error: false,
            attempts: 1,
            duration_ms: 1,
            started_at: now,
            completed_at: now,
          },
          {
            depth: 0,
            index,
            tool_call_id: `call_${index}`,
            name: 't',
            is_error: false,
            duration_ms: 1,
            output: `out ${index}`,
          },
        );
        return index;
      });
      const seen = await handler(3, {} as JobContext).then(() =>
        conn.hget(runKeys(stack.prefix, runId).toolCalls(0), '3'),
      );
      expect(seen && JSON.parse(seen).output).toBe('out 3');
    } finally {
      conn.disconnect();
    }
  });
});

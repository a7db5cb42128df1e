import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';

// A provider that sends its headers and then drips, or sends nothing more, must not hold a step
// (or a run without timeout_ms) for ever; and a stream cut short is never taken for an answer.

const firstUser = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'user')?.content ?? '');
const calls = new Map<string, number>();
const scripts = new Map<string, (n: number, req: ChatRequest) => Reply>();
const handler: Handler = (req) => {
  const u = firstUser(req);
  const n = calls.get(u) ?? 0;
  calls.set(u, n + 1);
  return scripts.get(u)?.(n, req) ?? { content: 'no scenario' };
};
// The first words arrive, then the stream goes silent for a minute.
const stalls: Reply = { content: 'I am about to say something important', chunkDelayMs: 60_000 };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler, env: { MODEL_IDLE_TIMEOUT_MS: '300', MODEL_BACKOFF_BASE_MS: '20' } });
});
afterAll(async () => stack?.close());

describe('a model stream that goes silent', () => {
  it('is abandoned after MODEL_IDLE_TIMEOUT_MS and the step retried like any provider fault', async () => {
    const u = 'stall once';
    scripts.set(u, (n) => (n === 0 ? stalls : { content: 'the whole answer' }));
    const run = await stack.waitForRun((await stack.createRun({ input: u })).id);
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'stop', output: { content: 'the whole answer' } });
    expect(calls.get(u)).toBe(2);
    // The abandoned attempt left nothing in the transcript.
    const messages = (await stack.getJson(`/v1/runs/${run.id}/messages`)).data;
    expect(messages.filter((m) => m.role === 'assistant')).toEqual([
      { role: 'assistant', content: 'the whole answer' },
    ]);
  });

  it("is cut at the run's deadline, which ends the run on its timeout: never as an empty or partial answer", async () => {
    const u = 'stall to the deadline';
    scripts.set(u, () => stalls);
    // A silence longer than the run's deadline: the deadline, not the idle bound, ends it.
    const run = await stack.waitForRun(
      (await stack.createRun({ input: u, timeout_ms: 200, on_budget_exhausted: 'stop' })).id,
    );
    expect(run).toMatchObject({ status: 'incomplete', stop_reason: 'timeout', output: null });
  });

  it('under final_answer gets one last call with tools disabled at the deadline, whose answer completes the run', async () => {
    const u = 'stall, then answer at the deadline';
    scripts.set(u, (_n, req) =>
      req.tool_choice === 'none' || !req.tools ? { content: 'short answer in time' } : stalls,
    );
    const run = await stack.waitForRun((await stack.createRun({ input: u, timeout_ms: 200, tools: ['crm__*'] })).id);
    expect(run).toMatchObject({
      status: 'completed',
      stop_reason: 'timeout',
      output: { content: 'short answer in time' },
    });
  });
});

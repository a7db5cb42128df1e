import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';

// What a provider sends is not trusted. Issue 16, finding 12: a streamed tool-call `index` is
// the provider's JSON; used as an array index, "__proto__" wrote the call's fields onto
// Array.prototype (of every array in the agent-worker, and here in this process, which runs
// it). Decided outcome: such a stream is malformed, a provider fault retried like a dropped
// connection; the run goes on with the retry's answer and nothing of the bad stream. And a
// provider's error message, which some echo the request into, is only read and kept in part.
const chunk = (delta: object, finish: string | null = null) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const badStream = (index: unknown): Reply => ({
  rawChunks: [
    chunk({ role: 'assistant', content: null }),
    chunk({
      tool_calls: [{ index, id: 'call_evil', type: 'function', function: { name: 'crm__count_calls', arguments: '' } }],
    }),
    chunk({ tool_calls: [{ index, function: { arguments: '{}' } }] }),
    chunk({}, 'tool_calls'),
  ],
});

const firstUser = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;
const callsOf = (stack: Stack, u: string) => stack.llm.requests.filter((r) => firstUser(r) === u);
const indexOf = new Map<string, unknown>();
// A 400 whose message the classifier's patterns took quadratic time over (1 MB: minutes).
const hugeError: Reply = { error: { status: 400, message: 'maximum '.repeat(125_000) } };
let errorHandedOut: () => void;
const errorSent = new Promise<void>((resolve) => (errorHandedOut = resolve));

const handler: Handler = async (req) => {
  const u = firstUser(req);
  if (u === 'huge error') {
    errorHandedOut();
    return hugeError;
  }
  if (u === 'beside the huge error') {
    await errorSent;
    return { content: 'B done' };
  }
  if (u === 'deep arguments') {
    if (callsOf(stack, u).length > 1) return { content: String(req.messages.at(-1)?.content) };
    // Arguments nested 5,000 levels: within the model's answer, deeper than any tool takes.
    const deep = `{"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    return { tool_calls: [{ name: 'crm__count_calls', arguments: deep }] };
  }
  return callsOf(stack, u).length === 1 ? badStream(indexOf.get(u)) : { content: `answered: ${u}` };
};
const polluted = () => ['id', 'name', 'arguments', 'type', 'function'].filter((k) => k in [] || k in {});

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler, env: { MODEL_BACKOFF_BASE_MS: '20' } });
});
afterAll(async () => {
  await stack?.close();
  // Were the accumulator ever to write through a provider's index again, the pollution would
  // outlive this file in this worker process: take it back.
  for (const k of ['id', 'name', 'arguments']) delete (Array.prototype as unknown as Record<string, unknown>)[k];
});

describe("a provider's tool-call index", () => {
  it.each([
    ['"__proto__"', '__proto__'],
    ['a huge one', 100_000_000],
  ])(
    '(%s) pollutes nothing: the step is retried as a provider fault and the run completes with the retry',
    async (label, index) => {
      const u = `bad index ${label}`;
      indexOf.set(u, index);
      const run = await stack.waitForRun((await stack.createRun({ input: u, max_depth: 1 })).id);
      expect(polluted()).toEqual([]);
      expect(run).toMatchObject({ status: 'completed', depth: 0, output: { content: `answered: ${u}` } });
      expect(callsOf(stack, u)).toHaveLength(2);
      expect(run.usage.model_calls).toBe(1);
      const messages = (await stack.getJson(`/v1/runs/${run.id}/messages`)).data;
      expect(messages).toEqual([
        { role: 'user', content: u },
        { role: 'assistant', content: `answered: ${u}` },
      ]);
      expect(stack.crm.calls).toEqual([]);
    },
  );

  // Deliberately far below what the old classifier took over this message: with it, the event
  // loop these in-process services share is held past this timeout and the test fails.
  it("with a 1 MB error message stalls nothing, and the run's error keeps only its head", {
    timeout: 15_000,
  }, async () => {
    const a = await stack.createRun({ input: 'huge error' });
    const b = await stack.createRun({ input: 'beside the huge error' });
    const [aRun, bRun] = await Promise.all([
      stack.waitForRun(a.id, { timeoutMs: 15_000 }),
      stack.waitForRun(b.id, { timeoutMs: 15_000 }),
    ]);
    expect(bRun).toMatchObject({ status: 'completed', output: { content: 'B done' } });
    expect(aRun).toMatchObject({
      status: 'failed',
      error: {
        code: 'model_bad_request',
        message: expect.stringMatching(
          /^the model endpoint rejected the request \(400\): 400 maximum maximum .*… \(\d+ characters\)$/,
        ),
      },
    });
    expect(aRun.error!.message.length).toBeLessThan(2_200);
  });
});

describe("a model's deeply nested tool-call arguments", () => {
  it('are refused as invalid_arguments before anything parses them, and the call never runs', async () => {
    const before = stack.crm.calls.length;
    const { id } = await stack.createRun({ input: 'deep arguments' });
    const run = await stack.waitForRun(id);
    expect(run.status).toBe('completed');
    expect(run.output?.content).toBe('Error executing crm__count_calls: arguments nest deeper than 64 levels');
    const [call] = (await stack.getJson(`/v1/runs/${id}/steps`)).data[0].tool_calls;
    expect(call).toMatchObject({ outcome: 'invalid_arguments', is_error: true, attempts: 1 });
    expect(stack.crm.calls.length).toBe(before);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';

// Issue 16, finding 12: a provider's streamed tool-call `index` is the provider's JSON. Used as
// an array index, "__proto__" wrote the call's fields onto Array.prototype (of every array in
// the agent-worker, and here in this process, which runs it). Decided outcome: such a stream is
// malformed, a provider fault retried like a dropped connection; the run goes on with the
// retry's answer and nothing of the bad stream.
const chunk = (delta: object, finish: string | null = null) => ({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });
const badStream = (index: unknown): Reply => ({
  rawChunks: [
    chunk({ role: 'assistant', content: null }),
    chunk({ tool_calls: [{ index, id: 'call_evil', type: 'function', function: { name: 'crm__count_calls', arguments: '' } }] }),
    chunk({ tool_calls: [{ index, function: { arguments: '{}' } }] }),
    chunk({}, 'tool_calls'),
  ],
});

const firstUser = (req: ChatRequest) => req.messages.find((m: any) => m.role === 'user')?.content as string;
const callsOf = (stack: Stack, u: string) => stack.llm.requests.filter((r) => firstUser(r) === u);
const indexOf = new Map<string, unknown>();
const handler: Handler = (req) => {
  const u = firstUser(req);
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
  for (const k of ['id', 'name', 'arguments']) delete (Array.prototype as any)[k];
});

describe("a provider's tool-call index", () => {
  it.each([
    ['"__proto__"', '__proto__'],
    ['a huge one', 100_000_000],
  ])('(%s) pollutes nothing: the step is retried as a provider fault and the run completes with the retry', async (label, index) => {
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
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { FatalError } from '@agentq/shared/core';
import { startScriptedLlm, type ScriptedLlm } from '@agentq/scripted-llm';
import { ModelAnswersInFlight } from './model-answers-in-flight.js';
import { modelHttpFetch } from './model-http.js';
import { callModel, type ModelRequest } from './model-step.js';

/** Whether `p` has settled once the promises already queued have run. */
const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('ModelAnswersInFlight', () => {
  it('lets steps read on while what they hold is within the capacity', () => {
    const bytes = new ModelAnswersInFlight(100);
    const [a, b] = [bytes.hold(), bytes.hold()];
    expect(a.charge(60)).toBeUndefined();
    expect(b.charge(40)).toBeUndefined();
    expect(bytes.stats()).toEqual({ held: 100, holders: 2, waiting: 0 });
    a.release();
    b.release();
    expect(bytes.stats()).toEqual({ held: 0, holders: 0, waiting: 0 });
  });

  it('past the capacity, the step that began holding first reads on and the others wait until it ends', async () => {
    const bytes = new ModelAnswersInFlight(100);
    const [first, second, third] = [bytes.hold(), bytes.hold(), bytes.hold()];
    expect(first.charge(50)).toBeUndefined();
    expect(second.charge(40)).toBeUndefined();
    const secondWaits = second.charge(20)!;
    expect(secondWaits).toBeInstanceOf(Promise);
    const thirdWaits = third.charge(50)!;
    expect(thirdWaits).toBeInstanceOf(Promise);
    // The first holder is never held back, however much it reads.
    expect(first.charge(90)).toBeUndefined();
    expect(bytes.stats()).toEqual({ held: 250, holders: 3, waiting: 2 });
    expect(await settled(secondWaits)).toBe(false);
    first.release();
    // Now `second` began holding first: it reads on; `third` waits until what is held fits.
    expect(await settled(secondWaits)).toBe(true);
    expect(await settled(thirdWaits)).toBe(false);
    second.release();
    expect(await settled(thirdWaits)).toBe(true);
    third.release();
    expect(bytes.stats()).toEqual({ held: 0, holders: 0, waiting: 0 });
  });

  it("stops a wait with the signal's reason when it aborts, and counts nothing after a release", async () => {
    const bytes = new ModelAnswersInFlight(10);
    const [first, second] = [bytes.hold(), bytes.hold()];
    expect(first.charge(8)).toBeUndefined();
    const ctrl = new AbortController();
    const waiting = second.charge(8, ctrl.signal)!;
    const reason = new Error('run cancelled');
    ctrl.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(bytes.stats().waiting).toBe(0);
    second.release();
    expect(second.charge(100)).toBeUndefined();
    expect(bytes.stats()).toEqual({ held: 8, holders: 1, waiting: 0 });
    first.release();
  });
});

describe('callModel within the bound of model answers in flight', () => {
  const KB = 1024;
  let llm: ScriptedLlm;
  let modelFetch: ReturnType<typeof modelHttpFetch>;
  let client: OpenAI;
  /** An answer of `kb` KB of text in 1 KB deltas, named by the request's message. */
  const answer = (kb: number) => {
    const meta = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm' };
    const piece = (delta: object, finish: string | null = null) => ({
      ...meta,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    return [
      piece({ role: 'assistant', content: '' }),
      ...Array.from({ length: kb }, () => piece({ content: 'x'.repeat(KB) })),
      piece({}, 'stop'),
    ];
  };
  const req = (kb: number, over: Partial<ModelRequest> = {}): ModelRequest => ({
    model: 'scripted',
    messages: [{ role: 'user', content: String(kb) }],
    tools: [],
    toolChoice: 'absent',
    timeoutMs: 10_000,
    idleTimeoutMs: 10_000,
    ...over,
  });
  beforeAll(async () => {
    llm = await startScriptedLlm({ handler: (r) => ({ rawChunks: answer(Number(r.messages[0].content)) }) });
    modelFetch = modelHttpFetch({ maxResponseBytes: 64 << 20 });
    client = new OpenAI({ baseURL: llm.baseURL, apiKey: 'k', maxRetries: 0, fetch: modelFetch });
  });
  afterAll(async () => {
    modelFetch?.close();
    await llm?.close();
  });

  it('refuses an answer larger than the whole bound with model_response_too_large, naming the variable', async () => {
    const bound = new ModelAnswersInFlight(256 * KB);
    const hold = bound.hold();
    const err = await callModel(client, req(1024, { answer: hold })).catch((e) => e);
    hold.release();
    expect(err).toBeInstanceOf(FatalError);
    expect(err.code).toBe('model_response_too_large');
    expect(err.message).toContain('MODEL_ANSWERS_IN_FLIGHT_MB');
    // Within the bound, an answer arrives whole.
    const fits = bound.hold();
    expect((await callModel(client, req(128, { answer: fits }))).message.content).toHaveLength(128 * KB);
    fits.release();
  });

  it('a step whose answer would pass the bound waits, without timing out on its own wait, until the first step ends', async () => {
    const bound = new ModelAnswersInFlight(1024 * KB);
    const [first, second] = [bound.hold(), bound.hold()];
    // The first answer is read whole and kept (its step is still storing it); the second
    // begins, passes the bound and waits, past its idle bound, until the first step ends.
    expect((await callModel(client, req(800, { answer: first }))).message.content).toHaveLength(800 * KB);
    const call = callModel(client, req(800, { answer: second, idleTimeoutMs: 300 }));
    while (bound.stats().waiting === 0) await new Promise((r) => setTimeout(r, 10));
    // Twice its idle bound: the wait is the step's own, not the provider's silence.
    await new Promise((r) => setTimeout(r, 600));
    expect(await settled(call)).toBe(false);
    expect(bound.stats().held).toBeLessThan(1024 * KB + 256 * KB);
    first.release();
    expect((await call).message.content).toHaveLength(800 * KB);
    second.release();
    expect(bound.stats()).toEqual({ held: 0, holders: 0, waiting: 0 });
  });
});

import { getEventListeners } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { AgentqError, FatalError, RetryableError } from '@agentq/shared/core';
import { startScriptedLlm, type Reply, type ScriptedLlm } from '@agentq/scripted-llm';
import { modelHttpFetch } from './model-http.js';
import { callModel, classifyProviderError, type ModelRequest } from './model-step.js';

const headers = (h: Record<string, string> = {}) => new Headers(h);
const apiError = (status: number, message: string, h: Record<string, string> = {}, code: string | null = null) =>
  OpenAI.APIError.generate(
    status,
    { error: { message, type: 'invalid_request_error', param: null, code } },
    undefined,
    headers(h),
  );

function kind(err: Error) {
  expect(err).toBeInstanceOf(AgentqError);
  return err as AgentqError & { retryAfterMs?: number };
}

describe('classifyProviderError', () => {
  it('429 with retry-after is retryable and carries the wait in ms', () => {
    const e = kind(classifyProviderError(apiError(429, 'Rate limit reached', { 'retry-after': '7' })));
    expect(e).toBeInstanceOf(RetryableError);
    expect(e.retryable).toBe(true);
    expect(e.retryAfterMs).toBe(7000);
  });

  it('429 with retry-after-ms uses the millisecond value', () => {
    const e = kind(classifyProviderError(apiError(429, 'Rate limit reached', { 'retry-after-ms': '250' })));
    expect(e.retryable).toBe(true);
    expect(e.retryAfterMs).toBe(250);
  });

  it('429 with an HTTP-date retry-after gives a wait that is not negative', () => {
    const e = kind(
      classifyProviderError(apiError(429, 'slow down', { 'retry-after': new Date(Date.now() + 60_000).toUTCString() })),
    );
    expect(e.retryable).toBe(true);
    expect(e.retryAfterMs).toBeGreaterThan(0);
    expect(e.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('429 without retry-after is still retryable', () => {
    const e = kind(classifyProviderError(apiError(429, 'Rate limit reached')));
    expect(e.retryable).toBe(true);
    expect(e.retryAfterMs).toBeUndefined();
  });

  it.each([500, 502, 503, 504])('%i is retryable', (status) => {
    const e = kind(classifyProviderError(apiError(status, 'The server had an error')));
    expect(e).toBeInstanceOf(RetryableError);
    expect(e.retryable).toBe(true);
  });

  it("a connection error names its innermost cause: the SDK's own message says only that it failed", () => {
    const socket = Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    const err = kind(
      classifyProviderError(
        new OpenAI.APIConnectionError({
          message: 'Connection error.',
          cause: new TypeError('fetch failed', { cause: socket }),
        }),
      ),
    );
    expect(err.code).toBe('model_unreachable');
    expect(err.message).toBe(
      'model endpoint unreachable: Connection error. (self-signed certificate; DEPTH_ZERO_SELF_SIGNED_CERT)',
    );
  });

  it('a connection error and a timeout are retryable', () => {
    expect(kind(classifyProviderError(new OpenAI.APIConnectionError({ message: 'Connection error.' }))).retryable).toBe(
      true,
    );
    expect(kind(classifyProviderError(new OpenAI.APIConnectionTimeoutError())).retryable).toBe(true);
  });

  it('400 for a too-long prompt is fatal context_length_exceeded', () => {
    const e = kind(
      classifyProviderError(
        apiError(
          400,
          "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
          {},
          'context_length_exceeded',
        ),
      ),
    );
    expect(e).toBeInstanceOf(FatalError);
    expect(e.retryable).toBe(false);
    expect(e.code).toBe('context_length_exceeded');
  });

  it('400 whose provider code is context_length_exceeded is context_length_exceeded whatever the wording', () => {
    // OpenAI's wording for newer models: the code says it, the message does not say "context".
    const e = kind(
      classifyProviderError(
        apiError(
          400,
          'Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300000 tokens.',
          {},
          'context_length_exceeded',
        ),
      ),
    );
    expect(e.retryable).toBe(false);
    expect(e.code).toBe('context_length_exceeded');
  });

  it('any other 400 is fatal and not context_length_exceeded', () => {
    const e = kind(classifyProviderError(apiError(400, "Invalid value for 'tool_choice'")));
    expect(e.retryable).toBe(false);
    expect(e.code).not.toBe('context_length_exceeded');
    expect(e.message).toContain('tool_choice');
  });

  it.each([401, 403])('%i is fatal and says the credentials were refused', (status) => {
    const e = kind(classifyProviderError(apiError(status, 'Incorrect API key provided')));
    expect(e).toBeInstanceOf(FatalError);
    expect(e.retryable).toBe(false);
    expect(e.message).toMatch(/credential|key|auth/i);
  });

  it('404 (unknown model) is fatal', () => {
    expect(kind(classifyProviderError(apiError(404, 'The model `gpt-9` does not exist'))).retryable).toBe(false);
  });

  it('a user abort is passed through (not turned into a retry)', () => {
    const abort = new OpenAI.APIUserAbortError();
    expect(classifyProviderError(abort)).toBe(abort);
  });
});

// Every model call goes through the node:http client (model-http.ts).
describe('callModel against an OpenAI-compatible server', () => {
  let llm: ScriptedLlm;
  let client: OpenAI;
  let modelFetch: ReturnType<typeof modelHttpFetch>;
  let next: Reply = { content: 'hi' };
  beforeAll(async () => {
    llm = await startScriptedLlm({ handler: () => next });
    modelFetch = modelHttpFetch({ maxResponseBytes: 1 << 20 });
    client = new OpenAI({ baseURL: llm.baseURL, apiKey: 'k', maxRetries: 0, fetch: modelFetch });
  });
  afterAll(async () => {
    modelFetch?.close();
    await llm?.close();
  });

  const tools: ModelRequest['tools'] = [
    {
      type: 'function',
      function: {
        name: 'crm__get_contact',
        description: 'Get one contact',
        parameters: { type: 'object', properties: { id: { type: 'string' } } },
      },
    },
  ];
  const req = (over: Partial<ModelRequest> = {}): ModelRequest => ({
    model: 'scripted',
    messages: [{ role: 'user', content: 'hello' }],
    tools,
    toolChoice: 'auto',
    timeoutMs: 10_000,
    idleTimeoutMs: 10_000,
    ...over,
  });

  it('assembles streamed text, reports usage and streams deltas', async () => {
    next = { content: 'Hello there, this is a longer answer in pieces.' };
    const deltas: string[] = [];
    const res = await callModel(client, req({ onDelta: (t) => deltas.push(t) }));
    expect(res.message).toEqual({ role: 'assistant', content: 'Hello there, this is a longer answer in pieces.' });
    expect(deltas.join('')).toBe('Hello there, this is a longer answer in pieces.');
    expect(res.usage.total_tokens).toBeGreaterThan(0);
  });

  it('assembles parallel tool calls in order, with their arguments', async () => {
    next = {
      tool_calls: [
        { name: 'crm__get_contact', arguments: { id: 'c1' } },
        { name: 'crm__get_contact', arguments: { id: 'c2' } },
      ],
    };
    const res = await callModel(client, req());
    const calls = res.message.tool_calls ?? [];
    expect(calls.map((c) => c.function.name)).toEqual(['crm__get_contact', 'crm__get_contact']);
    expect(calls.map((c) => JSON.parse(c.function.arguments))).toEqual([{ id: 'c1' }, { id: 'c2' }]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);
    expect(llm.requests.at(-1)).toMatchObject({ tool_choice: 'auto' });
    expect(llm.requests.at(-1)!.tools).toHaveLength(1);
  });

  it('with tools disabled sends tool_choice none and returns the tool calls the model makes anyway (the step decision drops them)', async () => {
    next = { tool_calls: [{ name: 'crm__get_contact', arguments: { id: 'c1' } }] };
    const res = await callModel(client, req({ toolChoice: 'none' }));
    expect(llm.requests.at(-1)!.tool_choice).toBe('none');
    expect(res.message.tool_calls?.map((c) => c.function.name)).toEqual(['crm__get_contact']);
  });

  it('with no tools sends no tools and no tool_choice', async () => {
    next = { content: 'plain' };
    await callModel(client, req({ toolChoice: 'absent' }));
    expect(llm.requests.at(-1)!.tools).toBeUndefined();
    expect(llm.requests.at(-1)!.tool_choice).toBeUndefined();
  });

  it('turns a 429 from the endpoint into a retryable error with the retry-after', async () => {
    next = { error: { status: 429, message: 'Rate limit reached', headers: { 'retry-after': '3' } } };
    const err = await callModel(client, req()).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.retryAfterMs).toBe(3000);
  });

  it('turns a 401 from the endpoint into a fatal error', async () => {
    next = { error: { status: 401, message: 'Incorrect API key provided' } };
    const err = await callModel(client, req()).catch((e) => e);
    expect(err).toBeInstanceOf(FatalError);
  });

  it('turns a context-length 400 from the endpoint into fatal context_length_exceeded', async () => {
    next = {
      error: {
        status: 400,
        message: "This model's maximum context length is 128000 tokens.",
        code: 'context_length_exceeded',
      },
    };
    const err = await callModel(client, req()).catch((e) => e);
    expect(err).toBeInstanceOf(FatalError);
    expect(err.code).toBe('context_length_exceeded');
  });

  it('turns a connection dropped mid-stream into a retryable error', async () => {
    next = { drop: true, afterChunks: 1 };
    const err = await callModel(client, req()).catch((e) => e);
    expect(err).toBeInstanceOf(AgentqError);
    expect(err.retryable).toBe(true);
  });

  it('turns a connection dropped before any byte into a retryable error', async () => {
    next = { drop: true };
    const err = await callModel(client, req()).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
  });

  it('turns an endpoint that refuses connections into model_unreachable', async () => {
    const closed = await startScriptedLlm({ handler: () => ({ content: 'x' }) });
    await closed.close();
    const other = new OpenAI({ baseURL: closed.baseURL, apiKey: 'k', maxRetries: 0, fetch: modelFetch });
    const err = await callModel(other, req()).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.code).toBe('model_unreachable');
  });

  it('ends a stream that goes silent with model_timeout (MODEL_IDLE_TIMEOUT_MS)', async () => {
    next = { content: 'one two three four', chunkDelayMs: 5_000 };
    const err = await callModel(client, req({ idleTimeoutMs: 200 })).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.code).toBe('model_timeout');
    expect(err.message).toContain('MODEL_IDLE_TIMEOUT_MS');
  });

  it('lets a stream that keeps sending run past MODEL_IDLE_TIMEOUT_MS: each chunk starts the idle bound again', async () => {
    next = { content: 'one two three four five six', chunkDelayMs: 100 };
    const res = await callModel(client, req({ idleTimeoutMs: 250 }));
    expect(res.message.content).toBe('one two three four five six');
  });

  it('ends a call that never answers with model_timeout (MODEL_TIMEOUT_MS)', async () => {
    next = { hang: true };
    const err = await callModel(client, req({ timeoutMs: 200 })).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.code).toBe('model_timeout');
  });

  it("leaves nothing listening on the caller's signal once a call is over, however it ended", async () => {
    const caller = new AbortController();
    next = { content: 'one' };
    await callModel(client, req({ signal: caller.signal }));
    next = { error: { status: 500, message: 'boom' } };
    await callModel(client, req({ signal: caller.signal })).catch(() => undefined);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  it("stops a stream when the caller's signal aborts, with the signal's reason", async () => {
    next = { content: 'a long answer that streams slowly', chunkDelayMs: 100 };
    const ctrl = new AbortController();
    const deltas: string[] = [];
    const reason = new Error('run cancelled');
    const err = await callModel(
      client,
      req({
        signal: ctrl.signal,
        onDelta: (t) => {
          deltas.push(t);
          ctrl.abort(reason);
        },
      }),
    ).catch((e) => e);
    expect(err).toBe(reason);
    expect(deltas.length).toBeGreaterThan(0);
    // The endpoint is still usable: an aborted call leaves nothing stuck behind it.
    next = { content: 'after' };
    expect((await callModel(client, req())).message.content).toBe('after');
  });
});

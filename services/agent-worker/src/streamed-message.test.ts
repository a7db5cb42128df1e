import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { FatalError, RetryableError } from '@agentq/shared/core';
import { startScriptedLlm, type Reply, type ScriptedLlm } from '@agentq/scripted-llm';
import { callModel, type ModelRequest, type ModelResponse } from './model-step.js';
import { MAX_TOOL_CALLS } from './streamed-message.js';

// Streams a provider might send, spoken over HTTP by the scripted server and read by the SDK
// and callModel as any provider's would be.
const chunk = (delta: object, finish: string | null = null) => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const toolDelta = (index: unknown, extra: object = {}) => ({
  tool_calls: [
    { index, id: 'call_x', type: 'function', function: { name: 'crm__count_calls', arguments: '{}' }, ...extra },
  ],
});
const stream = (...chunks: object[]): Reply => ({ rawChunks: [chunk({ role: 'assistant', content: '' }), ...chunks] });

// What a polluted prototype would show on every array and object of this process.
const polluted = () => ['id', 'name', 'arguments'].filter((k) => k in [] || k in {});

let llm: ScriptedLlm;
let client: OpenAI;
let next: Reply = { content: 'hi' };
beforeAll(async () => {
  llm = await startScriptedLlm({ handler: () => next });
  client = new OpenAI({ baseURL: llm.baseURL, apiKey: 'k', maxRetries: 0 });
});
afterAll(async () => {
  await llm?.close();
  // Were the accumulator ever to write through a provider's index again, do not let it poison
  // the rest of this process's tests.
  for (const k of ['id', 'name', 'arguments']) delete (Array.prototype as unknown as Record<string, unknown>)[k];
});

const req: ModelRequest = {
  model: 'scripted',
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  toolChoice: 'auto',
  timeoutMs: 10_000,
  idleTimeoutMs: 10_000,
};
// The response, or the error it was refused with (tests look at either).
const call = (reply: Reply): Promise<ModelResponse & Error> => {
  next = reply;
  return callModel(client, req).catch((e: unknown) => e) as Promise<ModelResponse & Error>;
};

describe('a streamed tool call whose index is not a small integer', () => {
  it.each([
    ['"__proto__"', '__proto__'],
    ['"constructor"', 'constructor'],
    // The old accumulator made a sparse array this long and walked it: 4,294,967,294 held the
    // event loop 199 s here; this one, seconds.
    ['a huge one', 100_000_000],
    ['one just past the bound', MAX_TOOL_CALLS],
    ['a negative one', -1],
    ['a fraction', 0.5],
    ['a numeric string', '0'],
    ['none at all', undefined],
  ])('(%s) is a malformed stream, retried like other provider faults, and pollutes nothing', async (_label, index) => {
    const err = await call(stream(chunk(toolDelta(index)), chunk({}, 'tool_calls')));
    expect(polluted()).toEqual([]);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err).toMatchObject({
      code: 'model_stream_malformed',
      message: expect.stringContaining("a tool call's index is"),
    });
  });

  it('refuses fields of the wrong type the same way', async () => {
    expect(
      await call(
        stream(chunk(toolDelta(0, { function: { name: { evil: true }, arguments: '{}' } })), chunk({}, 'tool_calls')),
      ),
    ).toMatchObject({ code: 'model_stream_malformed' });
    expect(await call(stream(chunk({ content: 42 }), chunk({}, 'stop')))).toMatchObject({
      code: 'model_stream_malformed',
    });
    expect(await call(stream(chunk({ tool_calls: { 0: {} } }), chunk({}, 'tool_calls')))).toMatchObject({
      code: 'model_stream_malformed',
    });
  });
});

describe('a well-formed stream', () => {
  it('assembles tool calls by index, whatever order their pieces come in', async () => {
    const res = await call(
      stream(
        chunk({ tool_calls: [{ index: 1, id: 'b', function: { name: 'crm__get_contact', arguments: '{"id":' } }] }),
        chunk({ tool_calls: [{ index: 0, id: 'a', function: { name: 'crm__count_calls', arguments: '' } }] }),
        chunk({
          tool_calls: [
            { index: 1, function: { arguments: '"c1"}' } },
            { index: 0, function: { arguments: '{}' } },
          ],
        }),
        chunk({
          tool_calls: [{ index: MAX_TOOL_CALLS - 1, id: 'z', function: { name: 'crm__last', arguments: '{}' } }],
        }),
        chunk({}, 'tool_calls'),
      ),
    );
    expect(res.message.tool_calls).toEqual([
      { id: 'a', type: 'function', function: { name: 'crm__count_calls', arguments: '{}' } },
      { id: 'b', type: 'function', function: { name: 'crm__get_contact', arguments: '{"id":"c1"}' } },
      { id: 'z', type: 'function', function: { name: 'crm__last', arguments: '{}' } },
    ]);
  });

  it('takes usage only when its counts are counts; otherwise it is estimated', async () => {
    const withUsage = (usage: object) => ({
      rawChunks: [
        chunk({ content: 'hello' }),
        chunk({}, 'stop'),
        { id: 'c', object: 'chat.completion.chunk', created: 0, model: 'm', choices: [], usage },
      ],
    });
    expect((await call(withUsage({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 }))).usage).toEqual({
      prompt_tokens: 7,
      completion_tokens: 2,
      total_tokens: 9,
    });
    const estimated = (await call(withUsage({ prompt_tokens: '7', completion_tokens: -2, total_tokens: 1e300 }))).usage;
    expect(estimated.prompt_tokens).toBeGreaterThan(0);
    expect(estimated.total_tokens).toBe(estimated.prompt_tokens + estimated.completion_tokens);
  });
});

/**
 * callModel against a provider that speaks the event stream's bytes exactly as given (its framing
 * included), once: the response, or the error the call was refused with.
 */
async function callRaw(body: string): Promise<ModelResponse & Error> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  try {
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });
    return (await callModel(client, req).catch((e: unknown) => e)) as ModelResponse & Error;
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}

describe('the event stream itself', () => {
  it('is read with CRLF line ends and comments between its events', async () => {
    const data = (c: object) => `data: ${JSON.stringify(c)}\r\n\r\n`;
    const res = await callRaw(
      `: processing\r\n\r\n${data(chunk({ role: 'assistant', content: '' }))}${data(chunk({ content: 'héllo ' }))}` +
        `: still here\r\n\r\n${data(chunk({ content: '✓' }))}${data(chunk({}, 'stop'))}data: [DONE]\r\n\r\n`,
    );
    expect(res.message.content).toBe('héllo ✓');
    expect(res.finishReason).toBe('stop');
  });

  it('an error in its data (after the 200) is a provider fault, retried like a 5xx, with its message', async () => {
    const err = await call({
      rawChunks: [
        chunk({ role: 'assistant', content: '' }),
        { error: { message: 'the model is overloaded mid-answer', type: 'server_error' } },
      ],
    });
    expect(err).toBeInstanceOf(RetryableError);
    expect(err).toMatchObject({
      code: 'model_unavailable',
      message: expect.stringContaining('the model is overloaded mid-answer'),
    });
  });

  it(
    "an error in its data that says it is the request's (a 4xx status, " +
      'invalid_request_error) fails the run as that answer would',
    async () => {
      const refused = await call({ rawChunks: [{ error: { message: 'prompt too long for this model', code: 400 } }] });
      expect(refused).toBeInstanceOf(FatalError);
      expect(refused).toMatchObject({ code: 'context_length_exceeded' });
      const invalid = await call({
        rawChunks: [{ error: { message: 'tools[0] is invalid', type: 'invalid_request_error' } }],
      });
      expect(invalid).toMatchObject({
        code: 'model_bad_request',
        message: expect.stringContaining('tools[0] is invalid'),
      });
    },
  );

  it(
    'an `event: error` is an error whatever its data, ' +
      'and an answer the stream ends in without a blank line or [DONE] is whole',
    async () => {
      const data = (c: object) => `data: ${JSON.stringify(c)}\n\n`;
      expect(
        await callRaw(
          `${data(chunk({ role: 'assistant', content: '' }))}` +
            `event: error\ndata: {"message":"stream reset by the upstream"}\n\n`,
        ),
      ).toMatchObject({
        code: 'model_unavailable',
        message: expect.stringContaining('stream reset by the upstream'),
      });
      const res = await callRaw(
        `${data(chunk({ role: 'assistant', content: 'hi' }))}data: ${JSON.stringify(chunk({}, 'stop'))}\n`,
      );
      expect(res.message.content).toBe('hi');
      expect(res.finishReason).toBe('stop');
    },
  );

  it('data that is not JSON is a malformed stream, retried like the others', async () => {
    const err = await callRaw(
      `data: ${JSON.stringify(chunk({ role: 'assistant', content: '' }))}\n\ndata: {not json\n\n`,
    );
    expect(err).toBeInstanceOf(RetryableError);
    expect(err).toMatchObject({ code: 'model_stream_malformed', message: expect.stringContaining('{not json') });
  });
});

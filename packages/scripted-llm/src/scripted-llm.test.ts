import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedLlm, toolResults, userText, type Handler, type ScriptedLlm } from './index.js';
import type { ErrorBody } from './http-io.js';

let llm: ScriptedLlm | undefined;
afterEach(async () => {
  await llm?.close();
  llm = undefined;
});

async function start(handler: Handler, latencyMs?: number) {
  llm = await startScriptedLlm({ handler, latencyMs });
  return { llm, client: new OpenAI({ baseURL: llm.baseURL, apiKey: 'test', maxRetries: 0 }) };
}

const messages = [{ role: 'user' as const, content: 'What is the weather in Paris and in Rome?' }];

describe('scripted LLM server', () => {
  it('streams a text answer over several chunks, then usage', async () => {
    const { client, llm } = await start(() => ({ content: 'The weather in Paris is sunny and warm today.' }));
    const stream = await client.chat.completions.create({
      model: 'm',
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const c of stream) {
      if (c.choices[0]?.delta.content) pieces.push(c.choices[0].delta.content);
      if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
      if (c.usage) usage = c.usage;
    }
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe('The weather in Paris is sunny and warm today.');
    expect(finish).toBe('stop');
    expect(usage).toEqual({ prompt_tokens: 11, completion_tokens: 12, total_tokens: 23 });
    expect(llm.requests).toHaveLength(1);
    expect(userText(llm.requests[0])).toBe(messages[0].content);
  });

  it('streams two parallel tool calls whose arguments arrive in pieces', async () => {
    const { client } = await start(() => ({
      tool_calls: [
        { name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
        { id: 'call_custom', name: 'get_weather', arguments: '{"city":"Rome","unit":"celsius"}' },
      ],
    }));
    const stream = await client.chat.completions.create({
      model: 'm',
      messages,
      stream: true,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
    });
    const calls: Array<{ id?: string; name?: string; args: string; pieces: number }> = [];
    let finish: string | null = null;
    for await (const c of stream) {
      for (const d of c.choices[0]?.delta.tool_calls ?? []) {
        calls[d.index] ??= { args: '', pieces: 0 };
        const call = calls[d.index];
        if (d.id) call.id = d.id;
        if (d.function?.name) call.name = d.function.name;
        if (d.function?.arguments) {
          call.args += d.function.arguments;
          call.pieces++;
        }
      }
      if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
    }
    expect(finish).toBe('tool_calls');
    expect(calls.map((c) => [c.id, c.name, JSON.parse(c.args)])).toEqual([
      ['call_1', 'get_weather', { city: 'Paris', unit: 'celsius' }],
      ['call_custom', 'get_weather', { city: 'Rome', unit: 'celsius' }],
    ]);
    for (const c of calls) expect(c.pieces).toBeGreaterThan(1);
  });

  it('answers a non-streamed request with a full completion', async () => {
    const { client } = await start((req, { callIndex }) =>
      callIndex === 0
        ? { tool_calls: [{ name: 'lookup', arguments: { q: 'x' } }], usage: { prompt_tokens: 100 } }
        : {
            content: `got ${toolResults(req)
              .map((r) => `${r.tool_call_id}=${r.content}`)
              .join(',')}`,
          },
    );
    const first = await client.chat.completions.create({ model: 'm', messages });
    expect(first.object).toBe('chat.completion');
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(first.choices[0].message.content).toBeNull();
    const call = first.choices[0].message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(call).toEqual({ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } });
    expect(first.usage).toEqual({ prompt_tokens: 100, completion_tokens: 4, total_tokens: 104 });

    const second = await client.chat.completions.create({
      model: 'm',
      messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: 'call_1', content: 'found' }],
    });
    expect(second.choices[0].message.content).toBe('got call_1=found');
    expect(second.choices[0].finish_reason).toBe('stop');
  });

  it('surfaces an error reply as the matching SDK error with its headers', async () => {
    const { client } = await start(() => ({
      error: { status: 429, message: 'Slow down', code: 'rate_limit_exceeded', headers: { 'retry-after': '2' } },
    }));
    const err = await client.chat.completions.create({ model: 'm', messages, stream: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const apiErr = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(apiErr.status).toBe(429);
    expect(apiErr.headers.get('retry-after')).toBe('2');
    expect(apiErr.code).toBe('rate_limit_exceeded');
    expect(apiErr.message).toContain('Slow down');
  });

  it('close() resolves promptly while a hanging request is open', async () => {
    let signal: AbortSignal | undefined;
    const { client, llm } = await start((_req, ctx) => {
      signal = ctx.signal;
      return { hang: true };
    });
    const pending = client.chat.completions.create({ model: 'm', messages }).catch((e: unknown) => e);
    await expect.poll(() => llm.requests.length).toBe(1);
    // The handler hangs until the client goes away: a close that waited for it would never resolve.
    await llm.close();
    expect(signal?.aborted).toBe(true);
    expect(await pending).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('aborts ctx.signal and abandons delays when the client disconnects', async () => {
    let signal: AbortSignal | undefined;
    const { client } = await start((_req, ctx) => {
      signal = ctx.signal;
      return { content: 'late', delayMs: 10_000 };
    });
    const ac = new AbortController();
    const pending = client.chat.completions.create({ model: 'm', messages }, { signal: ac.signal }).catch((e) => e);
    await expect.poll(() => signal).toBeDefined();
    ac.abort();
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    await expect.poll(() => signal?.aborted).toBe(true);
  });

  it('delivers chunks over time with chunkDelayMs', async () => {
    const { client } = await start(() => ({ content: 'one two three four', chunkDelayMs: 40 }));
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
    const times: number[] = [];
    for await (const c of stream) if (c.choices[0]?.delta.content) times.push(Date.now());
    expect(times).toHaveLength(4);
    expect(times[3] - times[0]).toBeGreaterThanOrEqual(100);
  });

  it('drops the connection mid-stream after the given number of chunks', async () => {
    const { client } = await start(() => ({ drop: true, afterChunks: 3 }));
    const stream = await client.chat.completions.create({ model: 'm', messages, stream: true });
    let received = 0;
    const err = await (async () => {
      for await (const _ of stream) received++;
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(received).toBe(3);

    llm!.setHandler(() => ({ drop: true }));
    const err2 = await client.chat.completions.create({ model: 'm', messages }).catch((e: unknown) => e);
    expect(err2).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('lists a model, 404s unknown paths and 400s invalid JSON', async () => {
    const { client, llm } = await start(() => ({ content: 'x' }));
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['scripted-llm']);

    const missing = await fetch(`${llm.baseURL}/nope`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as ErrorBody).error.type).toBe('not_found_error');

    const bad = await fetch(`${llm.baseURL}/chat/completions`, { method: 'POST', body: '{not json' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_json',
    });
    expect(llm.requests).toHaveLength(0);
  });
});

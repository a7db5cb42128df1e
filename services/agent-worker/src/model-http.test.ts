import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { FatalError, RetryableError } from '@agentq/shared/core';
import { startScriptedLlm, type Reply, type ScriptedLlm } from '@agentq/scripted-llm';
import { ERROR_BODY_MAX_BYTES, modelHttpFetch } from './model-http.js';
import { callModel, type ModelRequest } from './model-step.js';

const req = (over: Partial<ModelRequest> = {}): ModelRequest => ({
  model: 'scripted',
  messages: [{ role: 'user', content: 'hello' }],
  tools: [],
  toolChoice: 'absent',
  timeoutMs: 10_000,
  idleTimeoutMs: 10_000,
  ...over,
});

/** A plain HTTP server on loopback whose handler the test sets, counting the connections it accepts. */
async function rawServer(handler: http.RequestListener) {
  let connections = 0;
  const server = http.createServer(handler);
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    connections: () => connections,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A streamed answer of one piece of text; its response ends `endAfterMs` after `[DONE]`. */
const sse = (res: http.ServerResponse, content: string, endAfterMs = 0) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: object, finish: string | null) => ({
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content }, null))}\n\n`);
  res.write(`data: ${JSON.stringify(chunk({}, 'stop'))}\n\n`);
  res.write('data: [DONE]\n\n');
  if (endAfterMs) setTimeout(() => res.end(), endAfterMs);
  else res.end();
};

describe('the node:http model client', () => {
  let llm: ScriptedLlm;
  let next: Reply = { content: 'hi' };
  const fetches: Array<ReturnType<typeof modelHttpFetch>> = [];
  const clientOf = (baseURL: string, maxResponseBytes = 1 << 20) => {
    const f = modelHttpFetch({ maxResponseBytes });
    fetches.push(f);
    return new OpenAI({ baseURL, apiKey: 'k', maxRetries: 0, fetch: f });
  };
  beforeAll(async () => {
    llm = await startScriptedLlm({ handler: () => next });
  });
  afterEach(() => {
    for (const f of fetches.splice(0)) f.close();
  });
  afterAll(async () => llm?.close());

  it('keeps its connection between calls: streams the SDK stops reading at [DONE] do not close it', async () => {
    // The response ends a little after [DONE], when the SDK has stopped reading.
    const server = await rawServer((_req, res) => sse(res, 'pong', 30));
    try {
      const client = clientOf(server.baseURL);
      for (let i = 0; i < 5; i++) {
        expect((await callModel(client, req())).message.content).toBe('pong');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(server.connections()).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('keeps a request open while the model is silent for longer than an idle connection lives (4 s)', async () => {
    // A model that thinks before its first token: the connection's idle timeout is for pooled
    // connections only, not for one waiting on its answer.
    next = { content: 'after a long think', delayMs: 4_500 };
    expect((await callModel(clientOf(llm.baseURL), req())).message.content).toBe('after a long think');
  }, 15_000);

  it('sends nothing twice: a kept connection that breaks fails the call, for the step to retry', async () => {
    let served = 0;
    const server = await rawServer((request, res) => {
      // The second request, on the kept connection, is read and then the connection breaks: it
      // may have been acted on, so the client must not send it again by itself.
      if (++served === 2) return request.socket.destroy();
      sse(res, `answer ${served}`);
    });
    try {
      const client = clientOf(server.baseURL);
      expect((await callModel(client, req())).message.content).toBe('answer 1');
      const err = await callModel(client, req()).catch((e) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect(served).toBe(2);
      expect((await callModel(client, req())).message.content).toBe('answer 3');
    } finally {
      await server.close();
    }
  });

  it('goes through the proxy the environment names when given it (NODE_USE_ENV_PROXY=1)', async () => {
    const asked: string[] = [];
    const proxy = await rawServer((request, res) => {
      asked.push(request.url ?? '');
      sse(res, 'via proxy');
    });
    try {
      const target = 'http://model.invalid:9/v1';
      const f = modelHttpFetch({
        maxResponseBytes: 1 << 20,
        proxyEnv: { HTTP_PROXY: proxy.baseURL.replace('/v1', '') },
      });
      fetches.push(f);
      const client = new OpenAI({ baseURL: target, apiKey: 'k', maxRetries: 0, fetch: f });
      expect((await callModel(client, req())).message.content).toBe('via proxy');
      expect(asked).toEqual(['http://model.invalid:9/v1/chat/completions']);
    } finally {
      await proxy.close();
    }
  });

  it("ends a body with the signal's reason when the caller aborts, and reads a body once", async () => {
    const server = await rawServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {}\n\n');
    });
    try {
      const f = modelHttpFetch({ maxResponseBytes: 1 << 20 });
      fetches.push(f);
      const ctrl = new AbortController();
      const res = await f(`${server.baseURL}/x`, { method: 'POST', body: '{}', signal: ctrl.signal });
      const it = (res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
      expect((await it.next()).done).toBe(false);
      const reason = new Error('cancelled');
      const pending = it.next();
      ctrl.abort(reason);
      await expect(pending).rejects.toBe(reason);
      await expect(res.text()).rejects.toThrow(/already been read/);
    } finally {
      await server.close();
    }
  });

  it('sends only what the SDK sends, a URL and a string or bytes body over http(s), and refuses anything else', async () => {
    const f = modelHttpFetch({ maxResponseBytes: 1 << 20 });
    fetches.push(f);
    await expect(f(new Request('http://127.0.0.1:9/x'))).rejects.toThrow(/URL, not a Request/);
    await expect(f('ftp://127.0.0.1/x')).rejects.toThrow(/http: and https:/);
    await expect(f('http://127.0.0.1:9/x', { method: 'POST', body: new Blob(['x']) })).rejects.toThrow(
      /string or bytes/,
    );
  });

  it('fails a response larger than its bound with model_response_too_large, and the worker holds no more of it', async () => {
    next = { content: 'x'.repeat(200_000) };
    const err = await callModel(clientOf(llm.baseURL, 64 * 1024), req()).catch((e) => e);
    expect(err).toBeInstanceOf(FatalError);
    expect(err.code).toBe('model_response_too_large');
    expect(err.message).toContain('MODEL_RESPONSE_MAX_MB');
    // Within the bound, the same answer arrives whole.
    expect((await callModel(clientOf(llm.baseURL, 8 << 20), req())).message.content).toHaveLength(200_000);
  });

  it("reads an error response's text up to 1 MB: the error still names the status", async () => {
    const body = JSON.stringify({
      error: { message: `overloaded ${'z'.repeat(32 * ERROR_BODY_MAX_BYTES)}`, type: 'server_error' },
    });
    let sent = 0;
    const server = await rawServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.on('close', () => undefined);
      const write = () => {
        while (sent < body.length) {
          const piece = body.slice(sent, sent + 64 * 1024);
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', write);
        }
        res.end();
      };
      write();
    });
    try {
      const err = await callModel(clientOf(server.baseURL, 64 << 20), req()).catch((e) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect(err.code).toBe('model_unavailable');
      expect(err.message).toContain('503');
      // The client stopped reading after 1 MB and closed the connection: of the 32 MB, the
      // server sent no more than what the loopback's socket buffers took in besides.
      await new Promise((r) => setTimeout(r, 300));
      expect(sent).toBeLessThan(8 * ERROR_BODY_MAX_BYTES);
    } finally {
      await server.close();
    }
  });

  it("shows a response's headers as fetch does: any case, a name given twice joined", async () => {
    const server = await rawServer((_req, res) => {
      res.setHeader('X-Request-Id', 'req_1');
      res.setHeader('Retry-After', ['3', '4']);
      res.writeHead(429, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } }));
    });
    try {
      const f = modelHttpFetch({ maxResponseBytes: 1 << 20 });
      fetches.push(f);
      const res = await f(`${server.baseURL}/x`, { method: 'POST', body: '{}' });
      expect(res.headers.get('x-request-id')).toBe('req_1');
      expect(res.headers.get('X-REQUEST-ID')).toBe('req_1');
      expect(res.headers.get('retry-after')).toBe('3, 4');
      expect(res.headers.has('content-type')).toBe(true);
      expect(res.headers.get('nope')).toBeNull();
      expect([...res.headers.entries()].map(([k]) => k)).toEqual(
        expect.arrayContaining(['x-request-id', 'retry-after', 'content-type']),
      );
      expect(await res.json()).toMatchObject({ error: { message: 'slow down' } });
    } finally {
      await server.close();
    }
  });

  it('sends the request the SDK builds: headers, method and body as the platform fetch would', async () => {
    next = { content: 'ok' };
    const client = clientOf(llm.baseURL);
    await callModel(client, req({ messages: [{ role: 'user', content: 'héllo ✓' }] }));
    expect(llm.requests.at(-1)!.messages).toEqual([{ role: 'user', content: 'héllo ✓' }]);
    let seen: http.IncomingHttpHeaders = {};
    const server = await rawServer((request, res) => {
      seen = request.headers;
      request.resume();
      request.on('end', () => sse(res, 'ok'));
    });
    try {
      await callModel(clientOf(server.baseURL), req());
      expect(seen.authorization).toBe('Bearer k');
      expect(seen['content-type']).toBe('application/json');
      expect(Number(seen['content-length'])).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });
});

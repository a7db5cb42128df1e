import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AnswerBytesInFlight } from './answer-bytes.js';
import { boundedFetch } from './mcp-http-fetch.js';

const REQUEST = JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 't', arguments: {} } });
const post = { method: 'POST', body: REQUEST, headers: { 'content-type': 'application/json' } };
const answer = (id: number, text: string) =>
  JSON.stringify({ result: { content: [{ type: 'text', text }] }, jsonrpc: '2.0', id });

/** A loopback HTTP server whose every response is written by `respond`; `res` of the last request is kept. */
async function serve(
  respond: (res: ServerResponse) => void,
): Promise<{ url: string; last: () => ServerResponse; close: () => Promise<void> }> {
  let last: ServerResponse | undefined;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      last = res;
      respond(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    last: () => last!,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The `data:` payloads of an SSE body, parsed. */
const sseMessages = (body: string) =>
  body
    .split('\n\n')
    .filter((e) => e.includes('data:'))
    .map((e) =>
      JSON.parse(
        e
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
          .join('\n'),
      ),
    );

const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });

describe('boundedFetch', () => {
  const servers: Array<{ close: () => Promise<void> }> = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });
  const fetchOf = boundedFetch(1_000);

  it('passes SSE events through unchanged in meaning', async () => {
    const s = await serve((res) => {
      sse(res);
      res.write(
        `event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n`,
      );
      res.end(`data: ${answer(5, 'hi')}\n\n`);
    });
    servers.push(s);
    const body = await (await fetchOf(s.url, post)).text();
    expect(sseMessages(body)).toEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } },
      JSON.parse(answer(5, 'hi')),
    ]);
  });

  it('replaces an SSE answer over the limit by an error answer to its request, and reads on', async () => {
    const s = await serve((res) => {
      sse(res);
      res.write(`data: ${answer(5, 'x'.repeat(50_000))}\n\n`);
      res.end(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}\n\n`);
    });
    servers.push(s);
    const [first, second] = sseMessages(await (await fetchOf(s.url, post)).text());
    expect(first).toMatchObject({ jsonrpc: '2.0', id: 5, error: { data: { agentq: 'message_too_large' } } });
    expect(first.error.message).toMatch(
      /^the server's answer was over the 1000-byte limit on one MCP message \(500\d\d bytes\)/,
    );
    expect(second).toMatchObject({ method: 'notifications/message' });
  });

  it('answers connection_lost for a request whose SSE stream broke after its headers', async () => {
    const s = await serve((res) => {
      sse(res);
      res.write(': opened\n\n');
    });
    servers.push(s);
    const res = await fetchOf(s.url, post);
    s.last().socket!.destroy();
    expect(sseMessages(await res.text())).toEqual([
      {
        jsonrpc: '2.0',
        id: 5,
        error: {
          code: -32000,
          message: 'the answer stream closed without the answer',
          data: { agentq: 'connection_lost', text: 'the answer stream closed without the answer' },
        },
      },
    ]);
  });

  it('leaves a stream the server can resume (it sent event ids) to the SDK', async () => {
    const s = await serve((res) => {
      sse(res);
      res.write('id: e1\ndata: \n\n');
    });
    servers.push(s);
    const res = await fetchOf(s.url, post);
    s.last().socket!.destroy();
    await expect(res.text()).rejects.toThrow();
  });

  it('replaces a JSON answer over the limit', async () => {
    const s = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer(5, 'y'.repeat(5_000)));
    });
    servers.push(s);
    const body = await (await fetchOf(s.url, post)).json();
    expect(body).toMatchObject({ id: 5, error: { data: { agentq: 'message_too_large' } } });
    const small = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer(5, 'ok'));
    });
    servers.push(small);
    expect(await (await fetchOf(small.url, post)).json()).toEqual(JSON.parse(answer(5, 'ok')));
  });

  it.each([['json'], ['sse']])(
    '%s: answers that arrive interleaved hold no more than the bound on answers in flight, and each arrives whole',
    async (kind) => {
      // 20 answers of 512 KB, each written 32 KB at a time with a pause between, all at once: read
      // without a bound they would be held nearly all together (≈ 10 MB).
      const KB = 1024;
      const text = 'x'.repeat(512 * KB);
      const s = await serve((res) => {
        const payload = kind === 'sse' ? `data: ${answer(5, text)}\n\n` : answer(5, text);
        res.writeHead(200, { 'content-type': kind === 'sse' ? 'text/event-stream' : 'application/json' });
        let at = 0;
        const next = () => {
          if (at >= payload.length) return void res.end();
          res.write(payload.slice(at, at + 32 * KB));
          at += 32 * KB;
          setTimeout(next, 2);
        };
        next();
      });
      servers.push(s);
      const bound = new AnswerBytesInFlight(1024 * KB, 1024 * KB);
      const fetchBounded = boundedFetch(1024 * KB, fetch, bound);
      const bodies = await Promise.all(
        Array.from({ length: 20 }, async () => (await fetchBounded(s.url, post)).text()),
      );
      for (const body of bodies) {
        const message = kind === 'sse' ? sseMessages(body)[0] : JSON.parse(body);
        expect(message.result.content[0].text).toBe(text);
      }
      const { held, peak } = bound.stats();
      expect(held).toBe(0);
      // The bound, the first holder's message past it, and a chunk (≤ 64 KB) per reader.
      expect(peak).toBeGreaterThan(512 * KB);
      expect(peak).toBeLessThanOrEqual(2 * 1024 * KB + 20 * 64 * KB);
    },
  );
});

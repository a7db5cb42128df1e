import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toAnswer } from './answer.js';
import { answerChunks, fillerChunks } from './chunks.js';
import { completionBody } from './completion.js';
import { readBody, sendError, sendJson, writeEvent } from './http-io.js';
import { aborted, pause } from './pause.js';
import type { ChatRequest, Handler, Reply, ScriptedLlm } from './types.js';

const MODEL_ID = 'scripted-llm';

function isChatRequest(body: unknown): body is ChatRequest {
  return typeof body === 'object' && body !== null && Array.isArray((body as ChatRequest).messages);
}

function urlHost(host: string): string {
  // A wildcard bind is reached through loopback; IPv6 literals need brackets in a URL.
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** Start a scripted OpenAI-compatible chat-completions server whose answers come from `handler`. */
export async function startScriptedLlm(opts: {
  handler: Handler;
  port?: number;
  host?: string;
  latencyMs?: number;
}): Promise<ScriptedLlm> {
  let handler = opts.handler;
  let latencyMs = opts.latencyMs ?? 0;
  const host = opts.host ?? '127.0.0.1';
  const requests: ChatRequest[] = [];
  const requestHeaders: Array<Record<string, string | string[] | undefined>> = [];
  const inFlight = new Set<AbortController>();
  let completions = 0;
  let toolCalls = 0;
  const nextCallId = () => `call_${++toolCalls}`;

  async function chat(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
    let text: string;
    try {
      text = await readBody(req);
    } catch {
      return; // the client went away mid-body
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return sendError(res, 400, { message: 'Request body is not valid JSON.', code: 'invalid_json' });
    }
    if (!isChatRequest(body)) {
      return sendError(res, 400, { message: "'messages' must be an array.", code: 'invalid_request' });
    }
    const callIndex = requests.push(body) - 1;
    requestHeaders.push({ ...req.headers });
    let reply: Reply;
    try {
      reply = await handler(body, { callIndex, signal });
    } catch (err) {
      const message = `Scripted handler failed: ${err instanceof Error ? err.message : String(err)}`;
      return sendError(res, 500, { message, code: 'handler_failed' });
    }
    if (typeof reply !== 'object' || reply === null) {
      return sendError(res, 500, { message: 'Scripted handler returned no reply.', code: 'handler_failed' });
    }
    if ('hang' in reply) return aborted(signal);
    if (!(await pause(latencyMs + ('delayMs' in reply ? (reply.delayMs ?? 0) : 0), signal))) return;
    if ('error' in reply) return sendError(res, reply.error.status, reply.error);
    const stream = body.stream === true;
    if ('drop' in reply) {
      const after = reply.afterChunks ?? 0;
      if (stream && after > 0) {
        res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
        const filler = fillerChunks({
          id: `chatcmpl-${++completions}`,
          model: body.model,
          created: Math.floor(Date.now() / 1000),
        });
        for (let i = 0; i < after; i++) {
          if (!(await writeEvent(res, JSON.stringify(filler.next().value), signal))) return;
        }
      }
      res.socket?.destroy();
      return;
    }
    if ('rawChunks' in reply) {
      if (!stream)
        return sendError(res, 400, {
          message: 'A scripted raw stream needs "stream": true.',
          code: 'raw_needs_stream',
        });
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      for (const c of reply.rawChunks) if (!(await writeEvent(res, JSON.stringify(c), signal))) return;
      if (await writeEvent(res, '[DONE]', signal)) res.end();
      return;
    }
    const answer = toAnswer(body, reply, `chatcmpl-${++completions}`, nextCallId);
    if (!stream) return sendJson(res, 200, completionBody(answer));
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const chunks = answerChunks(answer, body.stream_options?.include_usage === true);
    for (const [i, c] of chunks.entries()) {
      if (i > 0 && !(await pause(reply.chunkDelayMs ?? 0, signal))) return;
      if (!(await writeEvent(res, JSON.stringify(c), signal))) return;
    }
    if (await writeEvent(res, '[DONE]', signal)) res.end();
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [{ id: MODEL_ID, object: 'model', created: 0, owned_by: 'agentq' }],
      });
    }
    if (req.method === 'POST' && path === '/v1/chat/completions') {
      const ac = new AbortController();
      inFlight.add(ac);
      // `res` (not `req`) closes when the client disconnects; a finished response is not an abort.
      res.once('close', () => {
        inFlight.delete(ac);
        if (!res.writableFinished) ac.abort(new Error('client disconnected'));
      });
      return chat(req, res, ac.signal);
    }
    sendError(res, 404, { message: `No route for ${req.method} ${path || '/'}.`, code: 'not_found' });
  }

  const server = createServer((req, res) => {
    route(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      sendError(res, 500, { message: err instanceof Error ? err.message : String(err) });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  return {
    baseURL: `http://${urlHost(host)}:${port}/v1`,
    port,
    requests,
    requestHeaders,
    setHandler(h) {
      handler = h;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Wake waiting requests (hang, delays) and cut keep-alive sockets so close never waits on a client.
        for (const ac of inFlight) ac.abort(new Error('server closing'));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

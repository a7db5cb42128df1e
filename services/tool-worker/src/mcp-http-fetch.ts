import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { AnswerBytesInFlight, AnswerReader } from './answer-bytes.js';
import { envelopeOf, LineReader, standInAnswer, tooLargeText, type OversizedMessage } from './mcp-message-limit.js';

type RequestId = string | number;
type Body = ReadableStream<Uint8Array> | Uint8Array | string;

const LOST_TEXT = 'the answer stream closed without the answer';

/** The ids of the requests in a JSON-RPC body we send (a message or a batch). */
function requestIds(body: unknown): RequestId[] {
  if (typeof body !== 'string') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [];
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((m) =>
    m && typeof m === 'object' && 'method' in m && 'id' in m && (typeof m.id === 'string' || typeof m.id === 'number')
      ? [m.id]
      : [],
  );
}

/** The ids a parsed message answers. */
function answeredIds(data: string): RequestId[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return [];
  }
  return (Array.isArray(parsed) ? parsed : [parsed]).flatMap((m) =>
    m && typeof m === 'object' && !('method' in m) && ('result' in m || 'error' in m) && 'id' in m
      ? [m.id as RequestId]
      : [],
  );
}

const sseEvent = (message: JSONRPCMessage) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/**
 * A `fetch` for the SDK's Streamable HTTP client transport that bounds what one answer may hold
 * and never leaves a request waiting on a stream that is gone:
 * - an answer (a JSON body, or one SSE event) over `maxMessageBytes` is read past, never held,
 *   and replaced by an error answer to its request, so only that call fails;
 * - an SSE stream that ends or breaks before answering a request it carries (and that the server
 *   cannot resume: it sent no event ids) gets a `connection_lost` error answer for it, at once,
 *   rather than the call waiting for its timeout;
 * - given `inFlight`, what every answer being read holds counts against the tool-worker's bound
 *   (MCP_ANSWERS_IN_FLIGHT_MB), and reading waits past it (see AnswerBytesInFlight).
 */
export function boundedFetch(
  maxMessageBytes: number,
  inner: typeof fetch = fetch,
  inFlight?: AnswerBytesInFlight,
): typeof fetch {
  return async (input, init) => {
    const res = await inner(input, init);
    if (!res.ok || !res.body) return res;
    const ids = requestIds(init?.body);
    const type = res.headers.get('content-type')?.split(';')[0].trim().toLowerCase();
    let body: Body;
    // Every SSE stream is bounded, also the standalone one of server notifications (no requests).
    if (type === 'text/event-stream') body = boundedSse(res.body, ids, maxMessageBytes, inFlight?.reader());
    else if (type === 'application/json' && ids.length > 0)
      body = await boundedJson(res.body, ids, maxMessageBytes, inFlight?.reader());
    else return res;
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** Reads a JSON answer up to the limit; past it, an error answer to each request instead. */
async function boundedJson(
  body: ReadableStream<Uint8Array>,
  ids: RequestId[],
  maxBytes: number,
  held?: AnswerReader,
): Promise<Body> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    for (;;) {
      // A body that breaks rejects here, and so the request: the transport's own error path.
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks);
      bytes += value.byteLength;
      if (bytes <= maxBytes) {
        chunks.push(value);
        await held?.charge(value.byteLength);
        continue;
      }
      // Count the rest without keeping it, so the size in the error is the answer's.
      chunks.length = 0;
      held?.free();
      for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.byteLength;
      const answers = ids.map((id) => standInAnswer(id, 'message_too_large', tooLargeText(bytes, maxBytes)));
      return JSON.stringify(answers.length === 1 ? answers[0] : answers);
    }
  } finally {
    held?.close();
  }
}

/** One SSE event as read: its fields, and its data (or what is kept of data over the limit). */
interface SseEvent {
  fields: string[];
  data: string[];
  /** The data's size so far, in bytes. */
  bytes: number;
  oversized?: OversizedMessage;
}

/** Passes an SSE stream through event by event, bounding each event's data (see boundedFetch). */
function boundedSse(
  source: ReadableStream<Uint8Array>,
  ids: RequestId[],
  maxBytes: number,
  held?: AnswerReader,
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  const lines = new LineReader(maxBytes);
  const pending = new Set<RequestId>(ids);
  const encoder = new TextEncoder();
  let event: SseEvent = { fields: [], data: [], bytes: 0 };
  let resumable = false;
  let out: string[] = [];

  const dispatch = () => {
    const e = event;
    event = { fields: [], data: [], bytes: 0 };
    if (e.oversized) {
      const { id, response } = envelopeOf(e.oversized);
      const text = tooLargeText(e.oversized.bytes, maxBytes);
      if (response && id !== undefined) {
        pending.delete(id);
        out.push(sseEvent(standInAnswer(id, 'message_too_large', text)));
      }
      return;
    }
    if (e.fields.length === 0 && e.data.length === 0) return;
    const data = e.data.join('\n');
    for (const id of answeredIds(data)) pending.delete(id);
    out.push(`${e.fields.join('\n')}${e.fields.length ? '\n' : ''}${e.data.map((d) => `data: ${d}\n`).join('')}\n`);
  };

  const take = (line: ReturnType<LineReader['push']>[number]) => {
    if ('oversized' in line) {
      // Only data can be this long; a data line over the limit makes its event oversized.
      const o = line.oversized;
      if (!o.head.startsWith('data:')) return;
      if (event.oversized) event.oversized.bytes += o.bytes;
      else event.oversized = { bytes: event.bytes + o.bytes, head: o.head.slice(5).replace(/^ /, ''), tail: o.tail };
      return;
    }
    const text = line.text;
    if (text === '') return dispatch();
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    const value = colon === -1 ? '' : text.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') {
      if (event.oversized) {
        event.oversized.bytes += Buffer.byteLength(value);
        return;
      }
      event.bytes += Buffer.byteLength(value);
      event.data.push(value);
      if (event.bytes > maxBytes) {
        const joined = event.data.join('\n');
        event.oversized = { bytes: event.bytes, head: joined.slice(0, 64 * 1024), tail: joined.slice(-512) };
        event.data = [];
      }
      return;
    }
    if (field === 'id' && value) resumable = true;
    if (field === 'id' || field === 'event' || field === 'retry') event.fields.push(`${field}: ${value}`);
  };

  /** The stream is over: requests it never answered get an error answer, unless it can resume. */
  const lost = () => {
    if (resumable) return;
    for (const id of pending) out.push(sseEvent(standInAnswer(id, 'connection_lost', LOST_TEXT)));
    pending.clear();
  };

  let finished = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Read until there is something to hand on: a pull that enqueues nothing is not called again.
      while (out.length === 0 && !finished) {
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } catch (err) {
          // A server that sent event ids can resume the stream: the SDK reconnects on this error.
          if (resumable) {
            held?.close();
            return controller.error(err);
          }
          r = { done: true, value: undefined };
        }
        if (r.done) {
          finished = true;
          lost();
        } else {
          for (const line of lines.push(Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength)))
            take(line);
          // Held until its event is handed on; past the bound, wait before reading more.
          if (out.length === 0) await held?.charge(r.value.byteLength);
        }
      }
      held?.free();
      if (out.length) controller.enqueue(encoder.encode(out.join('')));
      out = [];
      if (finished) {
        held?.close();
        controller.close();
      }
    },
    cancel(reason) {
      held?.close();
      return reader.cancel(reason);
    },
  });
}

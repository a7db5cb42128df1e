import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HttpError } from './http-error.js';
import { KeyShares } from './key-shares.js';

/**
 * Reads and throws away what is left of a request's body, up to `maxBytes` (or `timeoutMs`), so
 * that a client still sending it can finish and read the answer (a 413, a 503) instead of
 * getting EPIPE or ECONNRESET. A body longer than that is cut off: the connection is closed.
 */
export async function drainBody(c: Context, maxBytes: number, timeoutMs = 10_000): Promise<void> {
  const body = c.req.raw.body;
  if (!body || body.locked) return;
  const reader = body.getReader();
  const timer = setTimeout(() => void reader.cancel().catch(() => {}), timeoutMs);
  try {
    for (let seen = 0; seen <= maxBytes; ) {
      const { done, value } = await reader.read();
      if (done) return;
      seen += value.byteLength;
    }
  } catch {
    // The client went away, or the time ran out: nothing more to drain.
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}

/**
 * Bounds the request bodies one API process holds at once: a request reserves its
 * Content-Length (or the largest body allowed, when it sends none) until it is answered; a
 * request that does not fit beside those in flight gets 503 with Retry-After, its body drained
 * but never held. A request alone is always let in, whatever its size (the body limit bounds it).
 * One key holds at most half of the budget, or one largest body if that is more (its first
 * request is always let in): a key that sends large bodies slowly leaves room for the others.
 */
export class BodyBudget {
  /** The middleware that reserves a request's body, or refuses the request. */
  readonly middleware: MiddlewareHandler;
  #inFlight = 0;

  constructor(opts: { maxInFlightBytes: number; maxBodyBytes: number }) {
    const shares = new KeyShares(Math.max(opts.maxBodyBytes, Math.floor(opts.maxInFlightBytes / 2)));
    const busy = async (c: Context, message: string) => {
      await drainBody(c, opts.maxBodyBytes);
      return new HttpError(503, 'server_busy', message, undefined, { 'retry-after': '1', connection: 'close' });
    };
    this.middleware = async (c, next) => {
      const declared = c.req.header('content-length');
      const hasBody = declared !== undefined ? declared !== '0' : c.req.header('transfer-encoding') !== undefined;
      if (!hasBody) return next();
      const n = Number(declared);
      const size = Number.isSafeInteger(n) && n >= 0 ? Math.min(n, opts.maxBodyBytes) : opts.maxBodyBytes;
      // The server's name of the caller; signed links share one.
      const key = (c.get('tenant') as string | undefined) ?? '';
      if (this.#inFlight > 0 && this.#inFlight + size > opts.maxInFlightBytes) {
        throw await busy(
          c,
          `this API process is reading ${this.#inFlight} bytes of other requests (MAX_BODIES_IN_FLIGHT_BYTES); ` +
            `retry shortly`,
        );
      }
      if (!shares.allows(key, size)) {
        throw await busy(
          c,
          `this API process is reading ${shares.of(key)} bytes of this tenant's other requests ` +
            `(at most ${shares.maxPerKey}: half of MAX_BODIES_IN_FLIGHT_BYTES, or MAX_BODY_BYTES); retry shortly`,
        );
      }
      this.#inFlight += size;
      const release = shares.take(key, size);
      try {
        await next();
      } finally {
        this.#inFlight -= size;
        release();
      }
    };
  }

  /** Bytes reserved by the requests let in and not yet answered. */
  get bytesInFlight(): number {
    return this.#inFlight;
  }
}

/**
 * Refuses a request body over `maxBytes` (`tooLarge` answers it). A body that declares its
 * Content-Length is judged by it and left unread, so that its route reads it straight from the
 * socket (Node's parser holds a body to the length it declares); a GET or HEAD that declares no
 * body has none; any other body is counted as it is read, within the limit (hono's bodyLimit).
 * Touching the web Request's body, as hono's bodyLimit does first, would build a web Request
 * (and for a body a web stream) for every request.
 */
export function limitBody(maxBytes: number, tooLarge: (c: Context) => Promise<Response>): MiddlewareHandler {
  const counted = bodyLimit({ maxSize: maxBytes, onError: tooLarge });
  return async (c, next) => {
    const declared = c.req.header('content-length');
    const chunked = c.req.header('transfer-encoding') !== undefined;
    // Node's parser refuses a malformed length; anything else that is not digits is counted.
    if (declared !== undefined && !chunked && /^\d+$/.test(declared))
      return Number(declared) > maxBytes ? tooLarge(c) : next();
    if (declared === undefined && !chunked && (c.req.method === 'GET' || c.req.method === 'HEAD')) return next();
    return counted(c, next);
  };
}

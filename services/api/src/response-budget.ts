import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { HttpError } from './http-error.js';

// Answers smaller than this are sent without being counted: what they weigh is less than what
// counting them would cost the API's most frequent answers (a run polled with GET).
const UNCOUNTED_BELOW_BYTES = 64 * 1024;

/**
 * Bounds the bytes of large answers (a run, its transcript, steps, sub-runs) one API process holds
 * until they are sent: an answer holds its size until its connection has taken all of it or
 * closed. One that does not fit beside those in flight gets 503 with Retry-After and is never
 * held: a client that asks for answers and does not read them would otherwise keep them in the
 * process's memory for as long as it likes. An answer alone is always let in.
 */
export class ResponseBudget {
  private inFlight = 0;

  constructor(private readonly maxBytes: number) {}

  /** Holds `bytes` for the answer `c` is about to send (unless it is small), or throws the 503. */
  hold(c: Context, bytes: number): void {
    if (bytes < UNCOUNTED_BELOW_BYTES) return;
    if (this.inFlight > 0 && this.inFlight + bytes > this.maxBytes) {
      throw new HttpError(503, 'server_busy', `this API process is sending ${this.inFlight} bytes of other answers (MAX_RESPONSES_IN_FLIGHT_BYTES); retry shortly`, undefined, {
        'retry-after': '1',
      });
    }
    this.inFlight += bytes;
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      this.inFlight -= bytes;
    };
    // The node server's response: closed once the answer is all written, or the client is gone.
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (outgoing && !outgoing.destroyed) outgoing.once('close', release);
    else queueMicrotask(release);
  }

  /** `body` (JSON) as the answer of `c`, held (see hold) until it is sent. */
  json(c: Context, body: string | Buffer): Response {
    this.hold(c, typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    return c.body(body as string | Uint8Array<ArrayBuffer>, 200, { 'content-type': 'application/json' });
  }
}

import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { HttpError } from './http-error.js';
import { KeyShares } from './key-shares.js';

/**
 * Answers smaller than this are sent without being counted: what they weigh is less than what
 * counting them would cost the API's most frequent answers (a run polled with GET). A page of
 * events an SSE stream reads from Redis stays under it (routes/events.ts).
 */
export const UNCOUNTED_BELOW_BYTES = 64 * 1024;

/** An SSE stream waiting for room to write an event (ResponseBudget.waitFor). */
interface Waiter {
  bytes: number;
  /** The caller's key, whose share the bytes count in (none: counted in no key's share). */
  key: string | undefined;
  admit: () => void;
}

/** One hold for a buffer several streams write (ResponseBudget.waitForShared). */
interface SharedHold {
  holders: number;
  /** Ends the wait once no stream wants the buffer any more. */
  giveUp: AbortController;
  ready: Promise<(() => void) | null>;
  /** What `ready` resolved with, once it has. */
  release?: (() => void) | null;
}

/** Calls `release` once the node server's response of `c` has closed (all written, or its client gone). */
function whenSent(c: Context, release: () => void): void {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing && !outgoing.destroyed) outgoing.once('close', release);
  else queueMicrotask(release);
}

/**
 * Bounds the bytes of large answers (a run, its transcript, steps, sub-runs, a large event of an
 * SSE stream) one API process holds until they are sent: an answer holds its size until its
 * connection has taken all of it or closed. One that does not fit beside those in flight gets 503
 * with Retry-After and is never held: a client that asks for answers and does not read them would
 * otherwise keep them in the process's memory for as long as it likes. An SSE stream, whose
 * status line is long sent, waits instead (waitFor), in the order the streams asked. An answer
 * alone is always let in. One key's answers and streams together hold at most half of the budget
 * (KeyShares): a stream past its tenant's share waits for its own key's bytes to be sent, out of the
 * others' way, so a key that opens streams and reads none holds up no other key.
 */
export class ResponseBudget {
  private inFlight = 0;
  private readonly waiters: Waiter[] = [];
  private readonly shared = new Map<object, SharedHold>();
  /** What each tenant's answers and streams hold: at most half of the budget when more than one. */
  private readonly shares: KeyShares;
  /** Buffers answered to several requests (shared builds), each held once. */
  private readonly sharedBodies = new WeakMap<Buffer, { holders: number; release: () => void }>();

  constructor(private readonly maxBytes: number) {
    this.shares = new KeyShares(Math.floor(maxBytes / 2));
  }

  /** Bytes held by answers not yet sent (for tests and metrics). */
  get bytesInFlight(): number {
    return this.inFlight;
  }

  /** Streams waiting for room (for metrics). */
  get waiting(): number {
    return this.waiters.length;
  }

  /** Holds `bytes` for the answer `c` is about to send (unless it is small), or throws the 503. */
  hold(c: Context, bytes: number): void {
    if (bytes < UNCOUNTED_BELOW_BYTES) return;
    whenSent(c, this.reserve(c, bytes));
  }

  /**
   * Holds a buffer answered to several requests at once (a shared build: one body in memory)
   * once, for the key that asked first, until the last of them has been sent.
   */
  private holdBuffer(c: Context, body: Buffer): void {
    if (body.byteLength < UNCOUNTED_BELOW_BYTES) return;
    let held = this.sharedBodies.get(body);
    if (!held) {
      held = { holders: 0, release: this.reserve(c, body.byteLength) };
      this.sharedBodies.set(body, held);
    }
    const h = held;
    h.holders++;
    whenSent(c, () => {
      if (--h.holders > 0) return;
      this.sharedBodies.delete(body);
      h.release();
    });
  }

  /**
   * Takes `bytes` for the key of `c`, or throws the 503: when the answers in flight leave no room
   * (or streams wait for it), or when the tenant's own answers and streams would pass their share
   * (or one of its streams waits). Returns the release (idempotent).
   */
  private reserve(c: Context, bytes: number): () => void {
    // One key holds at most half of the budget (one answer alone always goes): a key that does
    // not read leaves room for the others'. The key is the server's name of the caller; signed
    // links share one.
    const key = (c.get('tenant') as string | undefined) ?? '';
    if (!this.withinShare(key, bytes) || this.keyWaits(key)) {
      throw new HttpError(
        503,
        'server_busy',
        `this API process is sending ${this.shares.of(key)} bytes of this tenant's other answers ` +
          `(at most half of MAX_RESPONSES_IN_FLIGHT_BYTES a key); retry shortly`,
        undefined,
        {
          'retry-after': '1',
        },
      );
    }
    // Streams waiting for room go first: an answer that fits now would otherwise pass them forever.
    if (this.inFlight > 0 && (this.queuedForRoom() || this.inFlight + bytes > this.maxBytes)) {
      throw new HttpError(
        503,
        'server_busy',
        `this API process is sending ${this.inFlight} bytes of other answers (MAX_RESPONSES_IN_FLIGHT_BYTES); ` +
          `retry shortly`,
        undefined,
        {
          'retry-after': '1',
        },
      );
    }
    return this.take(bytes, key);
  }

  /**
   * Waits until `bytes` fit beside the answers in flight (or none is in flight), in the order
   * asked, and within `key`'s share, then holds them; resolves with their release, or with null
   * if `signal` ended the wait first. Small sizes are not counted and never wait. A wait for the
   * key's own share holds up no other stream.
   */
  async waitFor(bytes: number, signal: AbortSignal, key?: string): Promise<(() => void) | null> {
    if (bytes < UNCOUNTED_BELOW_BYTES) return () => {};
    if (signal.aborted) return null;
    if (!this.queuedForRoom() && !this.keyWaits(key) && this.fits(bytes) && this.withinShare(key, bytes))
      return this.take(bytes, key);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        bytes,
        key,
        admit: () => {
          signal.removeEventListener('abort', giveUp);
          resolve(this.take(bytes, key));
        },
      };
      const giveUp = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(null);
        // The one that left may have been what the next in line waited behind.
        this.admitWaiters();
      };
      signal.addEventListener('abort', giveUp, { once: true });
      this.waiters.push(waiter);
    });
  }

  /**
   * waitFor for `buffer`, which several streams may write at once (a live event's frame is one
   * buffer for all the run's subscribers, all of the run's key): its bytes are held once, in the
   * first stream's key's share, from that stream's wait until the last of them has released it.
   * Resolves with this stream's release, or with null if `signal` ended its wait first.
   */
  async waitForShared(buffer: object, bytes: number, signal: AbortSignal, key?: string): Promise<(() => void) | null> {
    if (bytes < UNCOUNTED_BELOW_BYTES) return () => {};
    if (signal.aborted) return null;
    let hold = this.shared.get(buffer);
    if (!hold) {
      const giveUp = new AbortController();
      const created: SharedHold = { holders: 0, giveUp, ready: this.waitFor(bytes, giveUp.signal, key) };
      void created.ready.then((release) => {
        created.release = release;
      });
      hold = created;
      this.shared.set(buffer, hold);
    }
    const h = hold;
    h.holders++;
    let left = false;
    const leave = () => {
      if (left) return;
      left = true;
      if (--h.holders > 0) return;
      if (this.shared.get(buffer) === h) this.shared.delete(buffer);
      if (h.release !== undefined) h.release?.();
      else {
        h.giveUp.abort();
        void h.ready.then((release) => release?.());
      }
    };
    const got = await new Promise<(() => void) | null>((resolve) => {
      const onAbort = () => resolve(null);
      signal.addEventListener('abort', onAbort, { once: true });
      void h.ready.then((release) => {
        signal.removeEventListener('abort', onAbort);
        resolve(release);
      });
    });
    if (!got) {
      leave();
      return null;
    }
    return leave;
  }

  /** `body` (JSON) as the answer of `c`, held (see hold) until it is sent. */
  json(c: Context, body: string | Buffer, status: 200 | 202 = 200, headers: Record<string, string> = {}): Response {
    if (typeof body === 'string') this.hold(c, Buffer.byteLength(body));
    else this.holdBuffer(c, body);
    return c.body(body as string | Uint8Array<ArrayBuffer>, status, { ...headers, 'content-type': 'application/json' });
  }

  private fits(bytes: number): boolean {
    return this.inFlight === 0 || this.inFlight + bytes <= this.maxBytes;
  }

  private withinShare(key: string | undefined, bytes: number): boolean {
    return key === undefined || this.shares.allows(key, bytes);
  }

  /**
   * Whether a stream waits for the budget's room, not merely for its own key's share (or behind
   * a stream of its key that does): the first waiter of each key is the one that counts.
   */
  private queuedForRoom(): boolean {
    const seen = new Set<string>();
    for (const w of this.waiters) {
      if (w.key === undefined) return true;
      if (seen.has(w.key)) continue;
      seen.add(w.key);
      if (this.shares.allows(w.key, w.bytes)) return true;
    }
    return false;
  }

  /** Whether a stream of `key` waits: the tenant's later answers and streams come after it. */
  private keyWaits(key: string | undefined): boolean {
    return key !== undefined && this.waiters.some((w) => w.key === key);
  }

  /** Counts `bytes` in flight, in `key`'s share; the release (idempotent) gives them back and lets waiters in. */
  private take(bytes: number, key?: string): () => void {
    this.inFlight += bytes;
    const unshare = key === undefined ? undefined : this.shares.take(key, bytes);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.inFlight -= bytes;
      unshare?.();
      this.admitWaiters();
    };
  }

  /**
   * Lets waiting streams in, in the order they asked, while they fit; one past its tenant's share
   * is passed over, and the tenant's later ones with it (they wait for that tenant's own bytes, which
   * the other keys do not hold up; within a key, first come first served).
   */
  private admitWaiters(): void {
    let passed: Set<string> | undefined;
    for (let i = 0; i < this.waiters.length; ) {
      const w = this.waiters[i];
      if (w.key !== undefined && (passed?.has(w.key) || !this.withinShare(w.key, w.bytes))) {
        passed ??= new Set();
        passed.add(w.key);
        i++;
        continue;
      }
      if (!this.fits(w.bytes)) return;
      this.waiters.splice(i, 1);
      w.admit();
    }
  }
}

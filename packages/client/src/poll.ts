import { AgentqApiError } from './errors.js';

// Statuses worth another try of a read: the service is overloaded or briefly without Redis.
const TRANSIENT = new Set([429, 502, 503, 504]);

/**
 * True for an error that may go away by itself: a 429/5xx above, or fetch's TypeError for a dropped or
 * refused connection.
 */
export const isTransient = (err: unknown): boolean =>
  err instanceof AgentqApiError ? TRANSIENT.has(err.status) : err instanceof TypeError;

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface PollOptions {
  timeoutMs: number;
  /** First pause; grows 1.5× per poll. */
  intervalMs: number;
  /** Longest pause. */
  maxIntervalMs: number;
  signal?: AbortSignal;
}

/**
 * Calls `check` until it returns something other than undefined, pausing longer each time. A
 * transient error (isTransient) counts as "not yet"; any other error, or the signal, ends the
 * wait. At the deadline throws what `timedOut(lastError)` builds.
 */
export async function poll<T>(
  check: () => Promise<T | undefined>,
  o: PollOptions,
  timedOut: (lastError: unknown) => Error,
): Promise<T> {
  const deadline = Date.now() + o.timeoutMs;
  let interval = o.intervalMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
      lastError = undefined;
    } catch (err) {
      if (o.signal?.aborted || !isTransient(err)) throw err;
      lastError = err;
    }
    const left = deadline - Date.now();
    if (left <= 0) throw timedOut(lastError);
    await sleep(Math.min(interval, left), o.signal);
    interval = Math.min(interval * 1.5, o.maxIntervalMs);
  }
}

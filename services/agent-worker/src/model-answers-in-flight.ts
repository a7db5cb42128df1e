import { getHeapStatistics } from 'node:v8';
import { FatalError } from '@agentq/shared/core';

/**
 * The bytes of model answers an agent-worker's steps hold at once (MODEL_ANSWERS_IN_FLIGHT_MB).
 * A step holds its answer from the first byte it reads until the step ends: while the answer
 * streams in, and while the step stores it, which copies it several times over. Answers of tens
 * of megabytes, a few at once, would otherwise exhaust the heap, and the worker would die with
 * every step it was running.
 *
 * A step charges each piece of the answer it reads. Past the capacity, a step waits before it
 * reads more, except the step that began holding first, which always reads on: while its
 * provider sends, some step always finishes and frees what it holds. A waiting step stops
 * reading its stream, so TCP holds its provider back, not the worker's memory. What is held
 * passes the capacity by at most one answer (the first holder's; no answer may be larger than
 * the capacity: callModel refuses it) and a piece per waiting step.
 */
export class ModelAnswersInFlight {
  private held = 0;
  /** Steps holding bytes, in the order they began holding (a Map keeps insertion order). */
  private readonly holders = new Map<AnswerHold, number>();
  private readonly waiters = new Set<() => void>();

  /** @param capacity the bytes held at once before steps wait; also the largest answer taken */
  constructor(readonly capacity: number) {}

  /** What one step's answers hold; released when the step ends. */
  hold(): AnswerHold {
    let released = false;
    const hold: AnswerHold = {
      capacity: this.capacity,
      charge: (bytes, signal) => {
        if (released) return undefined;
        const mine = (this.holders.get(hold) ?? 0) + bytes;
        this.holders.set(hold, mine);
        this.held += bytes;
        return this.mayRead(hold) ? undefined : this.wait(hold, signal);
      },
      release: () => {
        if (released) return;
        released = true;
        const mine = this.holders.get(hold);
        if (mine === undefined) return;
        this.holders.delete(hold);
        this.held -= mine;
        this.wake();
      },
    };
    return hold;
  }

  /** Bytes held now, steps holding some, and steps waiting to read on. */
  stats(): { held: number; holders: number; waiting: number } {
    return { held: this.held, holders: this.holders.size, waiting: this.waiters.size };
  }

  private mayRead(hold: AnswerHold): boolean {
    return this.held <= this.capacity || this.holders.keys().next().value === hold;
  }

  private async wait(hold: AnswerHold, signal?: AbortSignal): Promise<void> {
    while (!this.mayRead(hold)) {
      signal?.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const woken = () => {
          signal?.removeEventListener('abort', aborted);
          resolve();
        };
        const aborted = () => {
          this.waiters.delete(woken);
          reject(signal!.reason);
        };
        this.waiters.add(woken);
        signal?.addEventListener('abort', aborted, { once: true });
      });
    }
  }

  private wake(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const w of waiting) w();
  }
}

/** What one step's model answers hold (see ModelAnswersInFlight). */
export interface AnswerHold {
  /** The most bytes one answer may have: a larger one is refused. */
  readonly capacity: number;
  /**
   * Counts `bytes` just read. Returns nothing when the step may read on at once, else a promise
   * that resolves once it may (rejects with the signal's reason if that aborts first).
   */
  charge(bytes: number, signal?: AbortSignal): Promise<void> | undefined;
  /** The step has ended: what it held is free (once; later charges count nothing). */
  release(): void;
}

/**
 * The default bound: a sixteenth of the heap limit (30 MB with the shipped heap flags). Storing an
 * answer makes several copies of it at once (the step record, the stored message, the event, the
 * command sent to Redis), so what one answer byte costs the heap at its peak is several bytes.
 */
export function defaultModelAnswersInFlightBytes(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 16);
}

/** The error of a model answer larger than the whole bound (it could never be held). */
export function answerTooLarge(capacity: number): FatalError {
  const mb = (capacity / 1024 / 1024).toFixed(capacity >= 10 * 1024 * 1024 ? 0 : 1);
  return new FatalError(
    `the model's answer passed ${mb} MB, more than this agent-worker holds of model answers at once (MODEL_ANSWERS_IN_FLIGHT_MB=${mb})`,
    'model_response_too_large',
  );
}

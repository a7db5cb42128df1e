import { getHeapStatistics } from 'node:v8';

/**
 * How many bytes of transcripts this worker's steps in flight hold at once (stored JSON): a step
 * holds its transcript several times over while its model call is made (the parsed messages,
 * the request body the SDK builds, the bytes sent), so many long transcripts at once would
 * exhaust the heap. A step takes room for its transcript before reading it and gives it back when
 * it ends; steps that find no room wait in the order they asked (first come, first served: a
 * large transcript is not passed over for ever by smaller ones).
 */
export class TranscriptsInFlight {
  private held = 0;
  private readonly waiting: Array<{ bytes: number; grant: () => void; signal?: AbortSignal; onAbort: () => void }> = [];

  /** @param capacity the most bytes held at once; no one step may hold more. */
  constructor(readonly capacity: number) {}

  /**
   * Room for `bytes` (at most `capacity`), once what is held and every earlier request leave it.
   * Rejects with the signal's reason if it aborts first.
   */
  async take(bytes: number, signal?: AbortSignal): Promise<TranscriptRoom> {
    if (bytes > this.capacity) throw new RangeError(`${bytes} bytes is more than the ${this.capacity} bytes there are`);
    signal?.throwIfAborted();
    if (this.waiting.length === 0 && this.held + bytes <= this.capacity) return this.grant(bytes);
    return new Promise<TranscriptRoom>((resolve, reject) => {
      const entry = {
        bytes,
        signal,
        grant: () => resolve(this.grant(bytes)),
        onAbort: () => {
          const at = this.waiting.indexOf(entry);
          if (at < 0) return;
          this.waiting.splice(at, 1);
          this.grantWaiting();
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', entry.onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  /** Bytes held now, and steps waiting for room. */
  stats(): { held: number; waiting: number } {
    return { held: this.held, waiting: this.waiting.length };
  }

  private grant(bytes: number): TranscriptRoom {
    this.held += bytes;
    let size = bytes;
    return {
      get bytes() {
        return size;
      },
      resize: (to) => {
        this.held += to - size;
        size = to;
        this.grantWaiting();
      },
      release: () => {
        this.held -= size;
        size = 0;
        this.grantWaiting();
      },
    };
  }

  private grantWaiting(): void {
    while (this.waiting.length && this.held + this.waiting[0].bytes <= this.capacity) {
      const next = this.waiting.shift()!;
      next.signal?.removeEventListener('abort', next.onAbort);
      next.grant();
    }
  }
}

/** Room a step holds for its transcript. */
export interface TranscriptRoom {
  readonly bytes: number;
  /**
   * Holds `bytes` now instead, at once, even beyond the capacity: for what a step learns after
   * reading (its transcript's exact size, a round's messages it appends), never to wait.
   */
  resize(bytes: number): void;
  /** Gives the room back (once; later calls give back nothing). */
  release(): void;
}

/**
 * The default bound: a sixteenth of the heap limit (25 MB with the shipped heap flags), so that the
 * several copies a step in flight makes of its transcript stay well inside the heap.
 */
export function defaultTranscriptsInFlightBytes(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 16);
}

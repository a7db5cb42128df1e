import { getHeapStatistics } from 'node:v8';

/**
 * The bytes of MCP answers a tool-worker holds while it reads them. Over HTTP every request is
 * a stream of its own, so many large answers at once (each up to MCP_MESSAGE_MAX_BYTES) could
 * exhaust the heap. A reader charges what it has read of the message it is reading and frees it
 * when the message is handed on. Past the bound, a reader waits before reading more, except the
 * one that began holding first, which always reads on: while its server sends, some answer is
 * always finished, and what is held passes the bound by at most one message and a chunk per
 * reader. A waiting reader stops pulling its stream, so its server is held back by TCP, not by
 * agentq's memory. A wait lasts at most `maxWaitMs`, so that a server that stalls mid-answer
 * cannot hold every other server's answers back.
 */
export class AnswerBytesInFlight {
  private held = 0;
  private peak = 0;
  /** Readers holding bytes, in the order they began holding (Map keeps insertion order). */
  private readonly holders = new Map<AnswerReader, number>();
  private waiters: Array<() => void> = [];

  /**
   * @param capacity the bytes held at once before readers wait
   * @param maxMessageBytes the most one reader holds (a message over it is counted, not kept)
   * @param maxWaitMs the longest one wait lasts: a server that stalls in the middle of the first
   *   holder's answer holds the other readers back by this much at a time, not until it resumes
   */
  constructor(
    readonly capacity: number,
    private readonly maxMessageBytes: number,
    private readonly maxWaitMs = 1000,
  ) {}

  /** A reader for one answer stream. */
  reader(): AnswerReader {
    let closed = false;
    const reader: AnswerReader = {
      charge: async (bytes) => {
        if (closed) return;
        const mine = this.holders.get(reader) ?? 0;
        const add = Math.max(0, Math.min(bytes, this.maxMessageBytes - mine));
        if (add > 0) {
          this.holders.set(reader, mine + add);
          this.held += add;
          this.peak = Math.max(this.peak, this.held);
        }
        const until = Date.now() + this.maxWaitMs;
        while (
          !closed &&
          this.held > this.capacity &&
          this.holders.keys().next().value !== reader &&
          Date.now() < until
        ) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              this.waiters = this.waiters.filter((w) => w !== woken);
              resolve();
            }, until - Date.now());
            const woken = () => {
              clearTimeout(timer);
              resolve();
            };
            this.waiters.push(woken);
          });
        }
      },
      free: () => {
        const mine = this.holders.get(reader);
        if (mine === undefined) return;
        this.holders.delete(reader);
        this.held -= mine;
        this.wake();
      },
      close: () => {
        closed = true;
        reader.free();
        this.wake();
      },
    };
    return reader;
  }

  /** Bytes held now, readers holding some, and the most bytes held at once so far. */
  stats(): { held: number; readers: number; peak: number } {
    return { held: this.held, readers: this.holders.size, peak: this.peak };
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) w();
  }
}

/** What one answer stream's reading charges. */
export interface AnswerReader {
  /** Counts `bytes` just read; resolves once the reader may read on. */
  charge(bytes: number): Promise<void>;
  /** The message read so far is handed on: what it held is free. */
  free(): void;
  /** The stream is over: frees what it holds, and a wait of its ends at once. */
  close(): void;
}

/** The default bound: an eighth of the heap limit (51 MB with the shipped heap flags). */
export function defaultAnswerBytesInFlight(): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 8);
}

import type { Redis } from 'ioredis';
import { eventFrom, type Logger, type RunEvent } from '@agentq/shared';

type Listener = (events: RunEvent[]) => void;

/** Compares two stream ids (`<ms>-<seq>`). */
export function compareIds(a: string, b: string): number {
  const [am, as = '0'] = a.split('-');
  const [bm, bs = '0'] = b.split('-');
  return Number(am) - Number(bm) || Number(as) - Number(bs);
}

/**
 * Follows the event streams of every run that some SSE client of this process watches, on
 * ONE blocking connection: a single XREAD over all watched streams. Adding a stream wakes
 * the blocked read (CLIENT UNBLOCK) so that the new stream is read at once.
 */
export class EventHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly positions = new Map<string, string>();
  private clientId: number | null = null;
  private running = false;
  private wake: (() => void) | null = null;
  private loopDone: Promise<void> | null = null;

  constructor(
    private readonly reader: Redis,
    private readonly control: Redis,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Watches `key` from `fromId` (exclusive); returns the unsubscribe. */
  subscribe(key: string, fromId: string, listener: Listener): () => void {
    let set = this.listeners.get(key);
    if (!set) {
      this.listeners.set(key, (set = new Set()));
      this.positions.set(key, fromId);
    }
    // A stream already watched keeps its position; a subscriber from further back reads what
    // it missed itself (XRANGE) before it takes events from the hub.
    set.add(listener);
    this.poke();
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(key) === set) {
        this.listeners.delete(key);
        this.positions.delete(key);
      }
    };
  }

  get watchedStreams(): number {
    return this.listeners.size;
  }

  private poke(): void {
    if (this.wake) {
      const w = this.wake;
      this.wake = null;
      w();
      return;
    }
    if (this.clientId !== null) void this.control.client('UNBLOCK', this.clientId).catch(() => {});
  }

  private async loop(): Promise<void> {
    while (this.running) {
      if (this.listeners.size === 0) {
        await new Promise<void>((r) => (this.wake = r));
        continue;
      }
      try {
        if (this.clientId === null) this.clientId = Number(await this.reader.client('ID'));
        const keys = [...this.positions.keys()];
        const ids = keys.map((k) => this.positions.get(k)!);
        const res = (await this.reader.xread('COUNT', 500, 'BLOCK', 15_000, 'STREAMS', ...keys, ...ids)) as [string, [string, string[]][]][] | null;
        for (const [key, entries] of res ?? []) {
          if (!entries.length || !this.positions.has(key)) continue;
          this.positions.set(key, entries[entries.length - 1][0]);
          const events = entries.map(([id, f]) => eventFrom(id, f));
          for (const l of this.listeners.get(key) ?? []) l(events);
        }
      } catch (err) {
        if (!this.running) break;
        // A new connection gets a new id; Redis may also be restarting: back off a little.
        this.clientId = null;
        this.logger.warn({ err: (err as Error).message }, 'event hub read failed; retrying');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Stops following: wakes the blocked read and waits for the loop to end (the connections are their owner's). */
  async close(): Promise<void> {
    this.running = false;
    this.poke();
    await this.loopDone?.catch(() => {});
  }
}

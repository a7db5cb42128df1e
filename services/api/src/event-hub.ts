import { isCluster, type Logger, type RedisClient } from '@agentq/shared/infra';
import { storedEventFrom, type StoredEvent } from '@agentq/shared/store';
import { isStreamId } from './stream-id.js';

/** Takes a stream's new events, oldest first (the same objects for every subscriber of the stream). */
type Listener = (events: StoredEvent[]) => void;

// How long the Cluster's way waits between reads that found nothing.
const POLL_MS = 50;

/** One subscriber: its listener, and what to do if the hub stops following its stream (Redis refused to read it). */
interface Subscriber {
  listener: Listener;
  onFailed?: (reason: string) => void;
}

/**
 * Follows the event streams of every run that some SSE client of this process watches, on
 * ONE blocking connection: a single XREAD over all watched streams. Adding a stream wakes
 * the blocked read (CLIENT UNBLOCK) so that the new stream is read at once.
 *
 * On a Redis Cluster the streams of different runs live on different slots, which one XREAD
 * cannot span: there the hub reads each watched stream without blocking, all at once, and
 * waits POLL_MS (or a new subscriber) when none had news.
 *
 * Since one read serves every stream, no stream may break it for the others: a position is
 * checked before it joins the read, and if Redis still refuses the read (an error about one
 * of its streams, not a lost connection), each stream is read once on its own, the ones Redis
 * refuses are dropped and their subscribers told, and the shared read goes on at once.
 */
export class EventHub {
  private readonly subscribers = new Map<string, Set<Subscriber>>();
  private readonly positions = new Map<string, string>();
  private clientId: number | null = null;
  private running = false;
  private wake: (() => void) | null = null;
  private loopDone: Promise<void> | null = null;

  constructor(
    private readonly reader: RedisClient,
    private readonly control: RedisClient,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.running = true;
    this.loopDone = this.loop();
  }

  /**
   * Watches `key` from `fromId` (exclusive; a stream id Redis takes, else a RangeError); returns
   * the unsubscribe. `onFailed` is called, and no event follows, if Redis refuses to read the stream.
   */
  subscribe(key: string, fromId: string, listener: Listener, onFailed?: (reason: string) => void): () => void {
    const subscriber: Subscriber = { listener, onFailed };
    if (!isStreamId(fromId)) throw new RangeError(`not a stream id: "${fromId.slice(0, 60)}"`);
    let set = this.subscribers.get(key);
    if (!set) {
      set = new Set();
      this.subscribers.set(key, set);
      this.positions.set(key, fromId);
    }
    // A stream already watched keeps its position; a subscriber from further back reads what
    // it missed itself (XRANGE) before it takes events from the hub.
    set.add(subscriber);
    this.poke();
    return () => {
      set.delete(subscriber);
      if (set.size === 0 && this.subscribers.get(key) === set) {
        this.subscribers.delete(key);
        this.positions.delete(key);
      }
    };
  }

  get watchedStreams(): number {
    return this.subscribers.size;
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
      if (this.subscribers.size === 0) {
        await new Promise<void>((r) => (this.wake = r));
        continue;
      }
      if (isCluster(this.reader)) {
        await this.poll();
        continue;
      }
      try {
        if (this.clientId === null) this.clientId = Number(await this.reader.client('ID'));
        const keys = [...this.positions.keys()];
        const ids = keys.map((k) => this.positions.get(k)!);
        const res = (await this.reader.xread('COUNT', 500, 'BLOCK', 15_000, 'STREAMS', ...keys, ...ids)) as
          | [string, [string, string[]][]][]
          | null;
        for (const [key, entries] of res ?? []) {
          if (!entries.length || !this.positions.has(key)) continue;
          this.positions.set(key, entries[entries.length - 1][0]);
          const events = entries.map(([id, f]) => storedEventFrom(id, f));
          for (const s of this.subscribers.get(key) ?? []) s.listener(events);
        }
      } catch (err) {
        if (!this.running) break;
        // Redis answered, with an error about the command: find the stream it is about.
        if ((err as Error).name === 'ReplyError' && (await this.dropRefusedStreams())) continue;
        // A new connection gets a new id; Redis may also be restarting: back off a little.
        this.clientId = null;
        this.logger.warn({ err: (err as Error).message }, 'event hub read failed; retrying');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** One round of the Cluster's way: every watched stream read at once, without blocking. */
  private async poll(): Promise<void> {
    const keys = [...this.positions.keys()];
    const reads = await Promise.all(
      keys.map((key) =>
        this.reader.xread('COUNT', 500, 'STREAMS', key, this.positions.get(key)!).then(
          (res) => ({ key, res: res as [string, [string, string[]][]][] | null, err: null }),
          (err: Error) => ({ key, res: null, err }),
        ),
      ),
    );
    let news = false;
    let down = false;
    for (const { key, res, err } of reads) {
      if (err) {
        if (err.name === 'ReplyError') this.drop(key, err.message);
        else down = true;
        continue;
      }
      const entries = res?.[0]?.[1] ?? [];
      if (!entries.length || !this.positions.has(key)) continue;
      news = true;
      this.positions.set(key, entries[entries.length - 1][0]);
      const events = entries.map(([id, f]) => storedEventFrom(id, f));
      for (const s of this.subscribers.get(key) ?? []) s.listener(events);
    }
    if (down) this.logger.warn('event hub read failed; retrying');
    if (!news)
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, down ? 500 : POLL_MS);
      });
    this.wake = null;
  }

  private drop(key: string, reason: string): void {
    const set = this.subscribers.get(key);
    this.subscribers.delete(key);
    this.positions.delete(key);
    this.logger.warn(
      { stream: key, err: reason, subscribers: set?.size ?? 0 },
      'Redis refused to read an event stream; its subscribers are ended, the others go on',
    );
    for (const s of set ?? []) s.onFailed?.(reason);
  }

  /**
   * Reads each watched stream once on its own (one pipelined round trip, no blocking) and drops
   * those Redis refuses, telling their subscribers; true if any was dropped.
   */
  private async dropRefusedStreams(): Promise<boolean> {
    const keys = [...this.positions.keys()];
    const pipeline = this.control.pipeline();
    for (const k of keys) pipeline.xread('COUNT', 1, 'STREAMS', k, this.positions.get(k)!);
    let results: [Error | null, unknown][] | null;
    try {
      results = await pipeline.exec();
    } catch {
      return false;
    }
    let dropped = false;
    (results ?? []).forEach(([err], i) => {
      if (!err) return;
      this.drop(keys[i], err.message);
      dropped = true;
    });
    return dropped;
  }

  /** Stops following: wakes the blocked read and waits for the loop to end (the connections are their tenant's). */
  async close(): Promise<void> {
    this.running = false;
    this.poke();
    await this.loopDone?.catch(() => {});
  }
}

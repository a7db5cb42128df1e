import type { RedisClient } from '../redis.js';
import { globalKeys } from '../store/keys.js';

const DAY_MS = 24 * 3600 * 1000;

/** The UTC day of a time, as the usage keys name it. */
export const utcDay = (ms = Date.now()) => new Date(ms).toISOString().slice(0, 10);

/** Counts what a key uses per UTC day (tokens) and per minute (requests), for its limits and GET /v1/usage. */
export class UsageMeter {
  private readonly g: ReturnType<typeof globalKeys>;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.g = globalKeys(prefix);
  }

  /** Adds tokens to the key's day (kept two days past it). */
  async countTokens(owner: string, tokens: number, now = Date.now()): Promise<void> {
    if (tokens <= 0) return;
    const key = this.g.usage(owner, utcDay(now));
    await this.redis
      .pipeline()
      .hincrby(key, 'tokens', tokens)
      .pexpire(key, 3 * DAY_MS)
      .exec();
  }

  async tokensToday(owner: string, now = Date.now()): Promise<number> {
    return Number((await this.redis.hget(this.g.usage(owner, utcDay(now)), 'tokens')) ?? 0);
  }

  /**
   * Adds `n` requests to the key's count for `minute` (minutes since the epoch; kept two minutes);
   * returns the count there now, this process's and every other's.
   */
  async countRequests(owner: string, minute: number, n: number): Promise<number> {
    const key = this.g.requests(owner, minute);
    const res = (await this.redis.pipeline().incrby(key, n).expire(key, 120).exec()) ?? [];
    const [err, count] = res[0] ?? [];
    if (err) throw err;
    return Number(count ?? 0);
  }
}

/**
 * Adds up tokens per key in memory and writes them to the key's day every `flushMs`: a
 * model step costs no round trip for it. A process that dies loses at most one interval of
 * counts (the day's limit then lets a little more through).
 */
export class TokenTally {
  private readonly pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly meter: UsageMeter,
    flushMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  /** Tokens counted here for the tenant and not yet written to its day. */
  pendingFor(owner: string): number {
    return this.pending.get(owner) ?? 0;
  }

  add(owner: string, tokens: number): void {
    if (tokens > 0) this.pending.set(owner, (this.pending.get(owner) ?? 0) + tokens);
  }

  async flush(): Promise<void> {
    const batch = [...this.pending];
    this.pending.clear();
    await Promise.all(batch.map(([owner, n]) => this.meter.countTokens(owner, n).catch(() => this.add(owner, n))));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

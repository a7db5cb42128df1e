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
    await this.redis.multi().hincrby(key, 'tokens', tokens).pexpire(key, 3 * DAY_MS).exec();
  }

  async tokensToday(owner: string, now = Date.now()): Promise<number> {
    return Number((await this.redis.hget(this.g.usage(owner, utcDay(now)), 'tokens')) ?? 0);
  }

  /** Counts one request in the key's current minute; returns the count so far and when the minute ends. */
  async countRequest(owner: string, now = Date.now()): Promise<{ count: number; resetMs: number }> {
    const minute = Math.floor(now / 60_000);
    const key = this.g.requests(owner, minute);
    const res = (await this.redis.multi().incr(key).expire(key, 120).exec()) ?? [];
    return { count: Number(res[0]?.[1] ?? 0), resetMs: (minute + 1) * 60_000 - now };
  }
}

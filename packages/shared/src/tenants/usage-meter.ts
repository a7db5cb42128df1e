import type { RedisClient } from '../infra/redis.js';
import { COST_FIELD, nanosToUsd } from '../core/schemas/usage.js';
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

  /** Adds tokens, and nano-dollars where prices are known, to the tenant's day (kept two days past it). */
  async countTokens(tenant: string, tokens: number, now = Date.now(), costNanos = 0): Promise<void> {
    if (tokens <= 0 && costNanos <= 0) return;
    const key = this.g.usage(tenant, utcDay(now));
    const pipe = this.redis.pipeline().hincrby(key, 'tokens', tokens);
    if (costNanos > 0) pipe.hincrby(key, COST_FIELD, costNanos);
    await pipe.pexpire(key, 3 * DAY_MS).exec();
  }

  async tokensToday(tenant: string, now = Date.now()): Promise<number> {
    return Number((await this.redis.hget(this.g.usage(tenant, utcDay(now)), 'tokens')) ?? 0);
  }

  /** The tenant's tokens and spend (US dollars, where prices are known) on the UTC day of `now`. */
  async today(tenant: string, now = Date.now()): Promise<{ tokens: number; costUsd: number }> {
    const [tokens, cost] = await this.redis.hmget(this.g.usage(tenant, utcDay(now)), 'tokens', COST_FIELD);
    return { tokens: Number(tokens ?? 0), costUsd: nanosToUsd(Number(cost ?? 0)) };
  }

  /**
   * Adds `n` requests to the tenant's count for `minute` (minutes since the epoch; kept two minutes);
   * returns the count there now, this process's and every other's.
   */
  async countRequests(tenant: string, minute: number, n: number): Promise<number> {
    const key = this.g.requests(tenant, minute);
    const res = (await this.redis.pipeline().incrby(key, n).expire(key, 120).exec()) ?? [];
    const [err, count] = res[0] ?? [];
    if (err) throw err;
    return Number(count ?? 0);
  }
}

/**
 * Adds up tokens per tenant in memory and writes them to the tenant's day every `flushMs`: a
 * model step costs no round trip for it. A process that dies loses at most one interval of
 * counts (the day's limit then lets a little more through).
 */
export class TokenTally {
  private readonly pending = new Map<string, number>();
  private readonly costs = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly meter: UsageMeter,
    flushMs = 1000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushMs);
    this.timer.unref();
  }

  /** Tokens counted here for the tenant and not yet written to its day. */
  pendingFor(tenant: string): number {
    return this.pending.get(tenant) ?? 0;
  }

  /** Counts a step's tokens, and its cost in nano-dollars when its price is known. */
  add(tenant: string, tokens: number, costNanos = 0): void {
    if (tokens > 0) this.pending.set(tenant, (this.pending.get(tenant) ?? 0) + tokens);
    if (costNanos > 0) this.costs.set(tenant, (this.costs.get(tenant) ?? 0) + costNanos);
  }

  async flush(): Promise<void> {
    const tenants = new Set([...this.pending.keys(), ...this.costs.keys()]);
    const batch = [...tenants].map((t) => [t, this.pending.get(t) ?? 0, this.costs.get(t) ?? 0] as const);
    this.pending.clear();
    this.costs.clear();
    await Promise.all(
      batch.map(([tenant, n, cost]) =>
        this.meter.countTokens(tenant, n, Date.now(), cost).catch(() => this.add(tenant, n, cost)),
      ),
    );
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

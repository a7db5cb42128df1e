import type { RedisClient } from '../infra/redis.js';
import { redisScript } from './redis-script.js';

/** Takes a call from a provider's bucket (see take-provider-token.lua). */
const takeToken = redisScript({
  file: 'take-provider-token',
  keys: (k: { bucketKey: string }) => [k.bucketKey],
  args: (a: { max: number; windowMs: number }) => [a.max, a.windowMs],
  reply: (r) => Number(r),
});

/**
 * The rate limits of model providers (PROVIDERS_CONFIG `rate_limit`), shared by every
 * agent-worker: one token bucket a provider, in Redis under the provider's own hash tag.
 */
export class ProviderBuckets {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** Takes one call of `provider`'s `max` per `windowMs`: 0 if taken, else how long until one is free (ms). */
  take(provider: string, limit: { max: number; ms: number }): Promise<number> {
    return takeToken(
      this.redis,
      { bucketKey: `${this.prefix}:{provider:${provider}}:bucket` },
      { max: limit.max, windowMs: limit.ms },
    );
  }
}

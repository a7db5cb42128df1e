import type { MiddlewareHandler } from 'hono';
import { limitsOf, type TenantTable, type UsageMeter } from '@agentq/shared';
import { HttpError } from './http-error.js';

/** A 429 in the contract's shape; `retryAfterMs` becomes the Retry-After header (whole seconds). */
export function rateLimited(message: string, retryAfterMs: number): HttpError {
  return new HttpError(429, 'rate_limited', message, undefined, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) });
}

/**
 * requests_per_minute: counts every `/v1` request of the key in its current minute, across
 * every API process (a counter in Redis), and answers 429 once the count this process last saw
 * is past the limit. The count is sent without waiting for it, so it costs a request no round
 * trip; a burst that arrives at once may pass the limit by the requests already under way.
 * Keys are authenticated owners, so the cache holds one entry per configured key.
 */
export function requestLimit(deps: { usage: UsageMeter; tenants: TenantTable }): MiddlewareHandler<{ Variables: { owner: string } }> {
  const seen = new Map<string, { minute: number; count: number }>();
  return async (c, next) => {
    const owner = c.get('owner');
    const now = Date.now();
    const minute = Math.floor(now / 60_000);
    const limit = limitsOf(deps.tenants, owner).requests_per_minute;
    const last = seen.get(owner);
    if (last && last.minute === minute && last.count >= limit) {
      last.count++;
      throw rateLimited(`this key made more than ${limit} requests this minute (requests_per_minute); retry after the minute`, (minute + 1) * 60_000 - now);
    }
    void deps.usage
      .countRequest(owner, now)
      .then(({ count }) => {
        const cur = seen.get(owner);
        if (!cur || cur.minute < minute || (cur.minute === minute && cur.count < count)) seen.set(owner, { minute, count });
      })
      .catch(() => {});
    return next();
  };
}

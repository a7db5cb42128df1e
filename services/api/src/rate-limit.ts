import type { MiddlewareHandler } from 'hono';
import { limitsOf, type TenantTable, type UsageMeter } from '@agentq/shared';
import { HttpError } from './http-error.js';

/** A 429 in the contract's shape; `retryAfterMs` becomes the Retry-After header (whole seconds). */
export function rateLimited(message: string, retryAfterMs: number): HttpError {
  return new HttpError(429, 'rate_limited', message, undefined, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) });
}

/**
 * requests_per_minute: counts every `/v1` request of the key in its current minute; past the
 * limit, 429 until the minute ends. Should Redis not answer, the request goes on (and meets
 * the 503 of whatever it reads).
 */
export function requestLimit(deps: { usage: UsageMeter; tenants: TenantTable }): MiddlewareHandler<{ Variables: { owner: string } }> {
  return async (c, next) => {
    const owner = c.get('owner');
    const seen = await deps.usage.countRequest(owner).catch(() => null);
    const limit = limitsOf(deps.tenants, owner).requests_per_minute;
    if (seen && seen.count > limit) throw rateLimited(`this key made more than ${limit} requests this minute (requests_per_minute); retry after the minute`, seen.resetMs);
    return next();
  };
}

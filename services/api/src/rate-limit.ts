import type { MiddlewareHandler } from 'hono';
import { limitsOf, type TenantTable, type UsageMeter } from '@agentq/shared/runs';
import { HttpError } from './http-error.js';

/** A 429 in the contract's shape; `retryAfterMs` becomes the Retry-After header (whole seconds). */
export function rateLimited(message: string, retryAfterMs: number): HttpError {
  return new HttpError(429, 'rate_limited', message, undefined, {
    'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
  });
}

/** How long a process holds its requests' count before it adds them to the tenant's count in Redis. */
const COUNT_FLUSH_MS = 20;

/** One key's requests in one minute, as this process knows them. */
interface MinuteCount {
  minute: number;
  /** The key's count in Redis when this process last added to it (every process's requests). */
  counted: number;
  /** This process's requests not yet added there, and those whose add is under way. */
  unsent: number;
  sending: number;
}

/**
 * requests_per_minute: counts every `/v1` request of the key in its current minute, across
 * every API process (a counter in Redis), and answers 429 once the count is past the limit: the
 * key's count in Redis as this process last saw it, plus this process's requests not yet there.
 * A process adds its requests to Redis once every COUNT_FLUSH_MS per tenant (one INCRBY for all of
 * them), so that a request costs no command and no round trip, and learns the other processes'
 * from the count that comes back: within one process the limit is exact; with several, a key
 * may pass it by what reaches the others before each learns the count (COUNT_FLUSH_MS and a
 * round trip). Keys are authenticated tenants, so the map holds one entry per configured key.
 */
export function requestLimit(deps: {
  usage: UsageMeter;
  tenants: TenantTable;
}): MiddlewareHandler<{ Variables: { tenant: string } }> {
  const counts = new Map<string, MinuteCount>();
  // One flush scheduled at a time: set while it is, cleared as it runs.
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setTimeout(flush, COUNT_FLUSH_MS).unref();
  };
  const flush = () => {
    scheduled = false;
    for (const [tenant, cur] of counts) {
      if (cur.unsent === 0) continue;
      const n = cur.unsent;
      cur.unsent = 0;
      cur.sending += n;
      void deps.usage.countRequests(tenant, cur.minute, n).then(
        (count) => {
          cur.sending -= n;
          cur.counted = Math.max(cur.counted, count);
        },
        () => {
          // Not counted in Redis: counted here still, and sent again with the next batch.
          cur.sending -= n;
          cur.unsent += n;
          schedule();
        },
      );
    }
  };
  return async (c, next) => {
    const tenant = c.get('tenant');
    const now = Date.now();
    const minute = Math.floor(now / 60_000);
    const limit = limitsOf(deps.tenants, tenant).requests_per_minute;
    let cur = counts.get(tenant);
    if (!cur || cur.minute !== minute) {
      cur = { minute, counted: 0, unsent: 0, sending: 0 };
      counts.set(tenant, cur);
    }
    if (cur.counted + cur.sending + cur.unsent >= limit) {
      throw rateLimited(
        `this key made more than ${limit} requests this minute (requests_per_minute); retry after the minute`,
        (minute + 1) * 60_000 - now,
      );
    }
    cur.unsent++;
    schedule();
    return next();
  };
}

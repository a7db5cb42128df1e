import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { HttpError } from './http-error.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The owner id of a key: a hash, so that keys never reach Redis or the logs. */
export function ownerOf(key: string | null): string {
  return key ? digest(key).toString('hex').slice(0, 24) : 'open';
}

/**
 * Bearer auth over `API_KEYS`: constant-time comparison (of hashes, so lengths leak nothing);
 * sets `owner` for tenant scoping. With no keys configured every request is the `open` owner.
 */
export function bearerAuth(keys: string[]): MiddlewareHandler<{ Variables: { owner: string } }> {
  const hashes = keys.map(digest);
  return async (c, next) => {
    if (hashes.length === 0) {
      c.set('owner', ownerOf(null));
      return next();
    }
    const header = c.req.header('authorization') ?? '';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const given = m ? digest(m[1]) : null;
    let ok = false;
    for (const h of hashes) if (given && timingSafeEqual(h, given)) ok = true;
    if (!ok || !m) {
      throw new HttpError(401, 'unauthorized', header ? 'the API key is not valid' : 'missing "Authorization: Bearer <key>" header', undefined);
    }
    c.set('owner', ownerOf(m[1]));
    return next();
  };
}

/**
 * Who opens `/admin/*` (the dashboard shows every tenant's jobs, inputs and outputs): the
 * `ADMIN_API_KEYS` when set; else, with `API_KEYS` set, nobody (a tenant's key is not an
 * operator's), with a 401 for a missing or wrong key as on `/v1` and a 403 for a tenant's
 * key; with neither set the service is open and so is the dashboard.
 */
export function adminAuth(apiKeys: string[], adminKeys: string[]): MiddlewareHandler<{ Variables: { owner: string } }> {
  if (adminKeys.length > 0) return bearerAuth(adminKeys);
  const tenants = bearerAuth(apiKeys);
  if (apiKeys.length === 0) return tenants;
  return (c, next) =>
    tenants(c, async () => {
      throw new HttpError(403, 'forbidden', 'the dashboard shows every tenant\'s jobs, so API keys do not open it: set ADMIN_API_KEYS on the server and use one of those keys');
    });
}

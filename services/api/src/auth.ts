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

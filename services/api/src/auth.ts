import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';
import { HttpError } from './http-error.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The tenant id of a key: a hash, so that keys never reach Redis or the logs. */
export function tenantOf(key: string | null): string {
  return key ? digest(key).toString('hex').slice(0, 24) : 'open';
}

/** The bearer key of a request if it is one of `hashes` (compared in constant time), else null. */
function matchKey(hashes: Buffer[], header: string): string | null {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) return null;
  const given = digest(m[1]);
  let ok = false;
  for (const h of hashes) if (timingSafeEqual(h, given)) ok = true;
  return ok ? m[1] : null;
}

const unauthorized = (header: string) =>
  new HttpError(
    401,
    'unauthorized',
    header ? 'the API key is not valid' : 'missing "Authorization: Bearer <key>" header',
  );

/**
 * Bearer auth over `API_KEYS`: constant-time comparison (of hashes, so lengths leak nothing);
 * sets `tenant` for tenant scoping. With no keys configured every request is the `open` tenant.
 */
export function bearerAuth(keys: string[]): MiddlewareHandler<{ Variables: { tenant: string } }> {
  const hashes = keys.map(digest);
  return async (c, next) => {
    if (hashes.length === 0) {
      c.set('tenant', tenantOf(null));
      return next();
    }
    const header = c.req.header('authorization') ?? '';
    const key = matchKey(hashes, header);
    if (key === null) throw unauthorized(header);
    c.set('tenant', tenantOf(key));
    return next();
  };
}

/**
 * Who opens `/admin/*` (the dashboard shows every tenant's jobs, inputs and outputs): an
 * `ADMIN_API_KEYS` key, or an API key that TENANTS_CONFIG marks `"admin": true` (`isAdmin` of
 * its tenant). Any other API key gets a 403 (a tenant's key is not an operator's), a missing or
 * unknown key a 401 as on `/v1`. With neither list set the service is open, the dashboard too.
 */
export function adminAuth(
  apiKeys: string[],
  adminKeys: string[],
  isAdmin: (tenant: string) => boolean = () => false,
): MiddlewareHandler<{ Variables: { tenant: string } }> {
  if (apiKeys.length === 0 && adminKeys.length === 0) return bearerAuth([]);
  const admins = adminKeys.map(digest);
  const tenants = apiKeys.map(digest);
  return async (c, next) => {
    const header = c.req.header('authorization') ?? '';
    const admin = matchKey(admins, header);
    const tenant = admin === null ? matchKey(tenants, header) : null;
    const key = admin ?? tenant;
    if (key === null) throw unauthorized(header);
    if (admin === null && !isAdmin(tenantOf(key))) {
      throw new HttpError(
        403,
        'forbidden',
        "the dashboard shows every tenant's jobs, so API keys do not open it: " +
          'use a key of ADMIN_API_KEYS (set it on the server), or mark the key "admin": true in TENANTS_CONFIG',
      );
    }
    c.set('tenant', tenantOf(key));
    return next();
  };
}

/** What a key opens, for a browser login: the API (as `tenant`) and the dashboard. */
export interface KeyAccess {
  /** The tenant its `/v1` requests act as (`open` while API_KEYS is unset). */
  tenant: string;
  /** It opens `/v1` (an API key, or any key while the API is open). */
  api: boolean;
  /** It opens `/admin/*`, as adminAuth decides. */
  admin: boolean;
}

/**
 * What `key` opens under the same rules as bearerAuth and adminAuth (compared in constant time), or null when it
 * opens nothing: the browser login (session.ts) takes a key once and keeps only this.
 */
export function keyAccess(
  apiKeys: string[],
  adminKeys: string[],
  isAdmin: (tenant: string) => boolean = () => false,
): (key: string) => KeyAccess | null {
  const tenants = apiKeys.map(digest);
  const admins = adminKeys.map(digest);
  const open = apiKeys.length === 0;
  return (key) => {
    const header = `Bearer ${key}`;
    const api = matchKey(tenants, header) !== null;
    const admin = matchKey(admins, header) !== null;
    if (!api && !admin) return null;
    return {
      tenant: open ? tenantOf(null) : tenantOf(key),
      api: api || open,
      admin: admin || (api && isAdmin(tenantOf(key))) || (open && adminKeys.length === 0),
    };
  };
}

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { RedisClient } from '@agentq/shared/infra';
import type { KeyAccess } from './auth.js';
import { HttpError } from './http-error.js';

/** The browser login's cookie: an opaque token, HttpOnly, SameSite=Strict (see `sessionCookie`). */
export const SESSION_COOKIE = 'agentq_session';
/** The header a cookie-authenticated request that changes something must carry, with the session's token. */
export const CSRF_HEADER = 'x-csrf-token';
/** How long a browser login lasts (not extended by use: a login a day, at most). */
export const SESSION_TTL_SECONDS = 12 * 3600;

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** A browser login, as kept in Redis: what its key opens (never the key) and its CSRF token. */
export interface Session extends KeyAccess {
  csrf: string;
}

const token = () => randomBytes(32).toString('base64url');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Browser logins, kept in Redis (`<prefix>:ui-session:<sha256 of the token>`) so that every API process knows them
 * and a logout ends one everywhere. The cookie holds only the token; Redis only its hash.
 */
export class Sessions {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    readonly ttlSeconds = SESSION_TTL_SECONDS,
  ) {}

  private key(t: string) {
    return `${this.prefix}:ui-session:${sha256(t)}`;
  }

  /** A new session for what a key opens; returns its cookie token. */
  async create(access: KeyAccess): Promise<{ token: string; session: Session }> {
    const t = token();
    const session: Session = { ...access, csrf: token() };
    await this.redis.set(this.key(t), JSON.stringify(session), 'EX', this.ttlSeconds);
    return { token: t, session };
  }

  /** The session of a cookie token, or null (unknown, expired, or not a token). */
  async get(t: string | undefined): Promise<Session | null> {
    if (!t || !TOKEN.test(t)) return null;
    const raw = await this.redis.get(this.key(t));
    return raw ? (JSON.parse(raw) as Session) : null;
  }

  async delete(t: string | undefined): Promise<void> {
    if (t && TOKEN.test(t)) await this.redis.del(this.key(t));
  }
}

/** The Set-Cookie value that holds a session (or, with `token` null, removes it). */
export function sessionCookie(c: Context, t: string | null, maxAgeSeconds: number): string {
  const secure = new URL(c.req.url).protocol === 'https:' || c.req.header('x-forwarded-proto') === 'https';
  const parts = [
    `${SESSION_COOKIE}=${t ?? ''}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${t ? maxAgeSeconds : 0}`,
  ];
  if (secure) parts.push('Secure');
  return parts.join('; ');
}

/** True when `given` is the session's CSRF token (compared in constant time). */
export function csrfMatches(session: Session, given: string | undefined): boolean {
  if (!given) return false;
  const a = Buffer.from(sha256(given));
  const b = Buffer.from(sha256(session.csrf));
  return timingSafeEqual(a, b);
}

/** A browser asking for a page (not a script asking for JSON). */
export const wantsHtml = (c: Context) => c.req.method === 'GET' && /\btext\/html\b/.test(c.req.header('accept') ?? '');

/**
 * Lets a browser login stand in for the bearer key: a request with an `Authorization` header, or without a
 * session cookie, goes to `bearer` as before; one with a live session acts as its tenant. A session opens `/v1`
 * when its key does (`need: 'api'`) and the dashboard when its key does (`need: 'admin'`; else 403). A request
 * that changes something must carry the session's CSRF token in `X-CSRF-Token`. A browser asking for a dashboard
 * page without a login is sent to the login page.
 */
export function withSession(
  sessions: Sessions,
  bearer: MiddlewareHandler<{ Variables: { tenant: string } }>,
  need: 'api' | 'admin',
  keysSet: boolean,
): MiddlewareHandler<{ Variables: { tenant: string } }> {
  return async (c, next) => {
    if (c.req.header('authorization')) return bearer(c, next);
    const session = await sessions.get(getCookie(c, SESSION_COOKIE));
    if (!session || (need === 'api' && !session.api)) {
      if (need === 'admin' && keysSet && wantsHtml(c)) {
        return c.redirect(`/ui/login?next=${encodeURIComponent(c.req.path)}`, 302);
      }
      return bearer(c, next);
    }
    if (need === 'admin' && !session.admin) {
      throw new HttpError(
        403,
        'forbidden',
        "the dashboard shows every tenant's jobs, so this login does not open it: " +
          'sign in with a key of ADMIN_API_KEYS, or one marked "admin": true in TENANTS_CONFIG',
      );
    }
    if (!SAFE_METHODS.has(c.req.method) && !csrfMatches(session, c.req.header(CSRF_HEADER))) {
      throw new HttpError(
        403,
        'csrf_failed',
        `a request signed in by the browser login that changes something needs the "${CSRF_HEADER}" header ` +
          'with the token GET /ui/session gives',
      );
    }
    c.set('tenant', session.tenant);
    return next();
  };
}

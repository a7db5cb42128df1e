import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie } from 'hono/cookie';
import type { KeyAccess } from '../auth.js';
import { HttpError } from '../http-error.js';
import { CSRF_HEADER, csrfMatches, SESSION_COOKIE, sessionCookie, type Session, type Sessions } from '../session.js';
import type { UiAsset } from '../ui-assets.js';
import { readJson } from '../validation.js';

export const UI_PATH = '/ui';

/**
 * The inspector's page may load only what the API itself serves, and no inline script or style attribute: a
 * model's text or a tool's output that holds HTML can run nothing even where it were ever put into the page.
 */
export const UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-security-policy': UI_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** A key is short; a login body larger than this is no login. */
const LOGIN_MAX_BYTES = 4096;

export interface UiRouteDeps {
  /** The build of `@agentq/ui` by path (see loadUiAssets); empty when it is not built. */
  assets: Map<string, UiAsset>;
  sessions: Sessions;
  /** What a key opens (null: nothing); see keyAccess. */
  access: (key: string) => KeyAccess | null;
  /** API_KEYS or ADMIN_API_KEYS is set: a browser must sign in. */
  keysSet: boolean;
}

/**
 * `GET /` (to the inspector), the inspector at `/ui` (its page and assets: no key needed, as the page asks for one),
 * and its browser login: `POST /ui/login` takes a key and sets the session cookie, `GET /ui/session` says who is
 * signed in (and the CSRF token), `POST /ui/logout` ends the session.
 */
export function uiRoutes(deps: UiRouteDeps) {
  const app = new Hono();

  app.get('/', (c) => c.redirect(`${UI_PATH}/`, 302));

  const session = (c: Context) => deps.sessions.get(getCookie(c, SESSION_COOKIE));
  const describe = (s: Session | null) => ({
    keys_required: deps.keysSet,
    signed_in: s !== null,
    api: s ? s.api : !deps.keysSet,
    dashboard: s ? s.admin : !deps.keysSet,
    csrf_token: s?.csrf ?? null,
  });
  const noStore = { 'cache-control': 'no-store' };

  app.get(`${UI_PATH}/session`, async (c) => c.json(describe(await session(c)), 200, noStore));

  app.post(
    `${UI_PATH}/login`,
    bodyLimit({
      maxSize: LOGIN_MAX_BYTES,
      onError: () => {
        throw new HttpError(413, 'payload_too_large', `a login body is at most ${LOGIN_MAX_BYTES} bytes`);
      },
    }),
    async (c) => {
      sameOrigin(c);
      const body = await readJson(c.req);
      const key = typeof body === 'object' && body !== null ? (body as { key?: unknown }).key : undefined;
      if (typeof key !== 'string' || !key.trim())
        throw new HttpError(400, 'validation_error', 'send {"key": "<an API key>"}', [
          { field: 'key', message: 'required' },
        ]);
      const access = deps.access(key.trim());
      if (!access) throw new HttpError(401, 'unauthorized', 'the API key is not valid');
      await deps.sessions.delete(getCookie(c, SESSION_COOKIE));
      const made = await deps.sessions.create(access);
      c.header('set-cookie', sessionCookie(c, made.token, deps.sessions.ttlSeconds));
      return c.json(describe(made.session), 200, noStore);
    },
  );

  app.post(`${UI_PATH}/logout`, async (c) => {
    sameOrigin(c);
    const token = getCookie(c, SESSION_COOKIE);
    const s = await deps.sessions.get(token);
    // Only the page that holds the session's CSRF token ends it (another site cannot sign a user out).
    if (s && !csrfMatches(s, c.req.header(CSRF_HEADER)))
      throw new HttpError(403, 'csrf_failed', `signing out needs the "${CSRF_HEADER}" header of the session`);
    await deps.sessions.delete(token);
    c.header('set-cookie', sessionCookie(c, null, 0));
    return c.json(describe(null), 200, noStore);
  });

  const send = (c: Context, asset: UiAsset, cache: string) => {
    const headers: Record<string, string> = {
      ...PAGE_HEADERS,
      'content-type': asset.type,
      'cache-control': cache,
      etag: asset.etag,
      vary: 'accept-encoding',
    };
    if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, headers);
    if (asset.gzip && /\bgzip\b/.test(c.req.header('accept-encoding') ?? '')) {
      return c.body(new Uint8Array(asset.gzip), 200, { ...headers, 'content-encoding': 'gzip' });
    }
    return c.body(new Uint8Array(asset.body), 200, headers);
  };

  // Hashed file names: cached for good.
  app.get(`${UI_PATH}/assets/:file`, (c) => {
    const asset = deps.assets.get(`assets/${c.req.param('file')}`);
    if (!asset) throw new HttpError(404, 'not_found', `no file ${c.req.path.slice(0, 200)}`);
    return send(c, asset, 'public, max-age=31536000, immutable');
  });
  const page = (c: Context) => {
    const index = deps.assets.get('index.html');
    if (!index) {
      throw new HttpError(
        503,
        'ui_not_built',
        'the inspector is not built: run "npm run build" (it builds packages/ui into packages/ui/dist)',
      );
    }
    return send(c, index, 'no-cache');
  };
  // The app's pages: one HTML page whose script reads the path.
  for (const path of ['', '/runs/:id', '/inbox', '/login']) app.get(`${UI_PATH}${path}`, page);
  return app;
}

/**
 * A login or logout comes from the inspector's own page: a browser says where a request comes from (Sec-Fetch-Site,
 * Origin), and one from another site is refused (no login CSRF: another site cannot sign a user in as its key).
 */
function sameOrigin(c: Context) {
  const site = c.req.header('sec-fetch-site');
  const origin = c.req.header('origin');
  const host = c.req.header('host');
  const crossSite = site !== undefined && site !== 'same-origin' && site !== 'none';
  let otherOrigin = false;
  if (origin !== undefined && host !== undefined) {
    try {
      otherOrigin = new URL(origin).host !== host;
    } catch {
      otherOrigin = true;
    }
  }
  if (crossSite || otherOrigin) throw new HttpError(403, 'csrf_failed', 'a login comes from the inspector page itself');
}

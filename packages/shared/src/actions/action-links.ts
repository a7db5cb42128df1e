import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ActionItemView } from '../core/schemas/run.js';
import { parseActionId } from './action-record.js';

/** The shortest ACTION_LINK_SECRET taken: a shorter one could be guessed offline from one link. */
export const MIN_ACTION_LINK_SECRET_CHARS = 32;

/** The path a signed link answers at (the token goes in its query). */
export const actionRespondPath = (id: string) => `/v1/actions/${id}/respond`;

/**
 * What a token says about the request it is shown with: `valid`; `invalid` (not signed with our
 * secret for this very request: tampered, truncated, another request's, made up); `expired`
 * (signed for this request, but its expiry has passed).
 */
export type ActionLinkCheck = 'valid' | 'invalid' | 'expired';

// `<expiry>.<signature>`: the expiry in ms since the epoch (`n`: none, the request waits until it
// is answered), no leading zero, so that one request and expiry have exactly one token; the
// signature is 32 bytes of HMAC-SHA256 in base64url (43 characters, no padding).
const TOKEN = /^(n|[1-9]\d{0,15})\.([A-Za-z0-9_-]{43})$/;
const NO_EXPIRY = 'n';
// What is signed starts with what it is for, so that no other MAC made with the same secret
// (say, by an operator who reused it elsewhere) can pass for a link.
const PURPOSE = 'agentq action link v1';

export interface ActionLinkOptions {
  /** ACTION_LINK_SECRET: the HMAC key; every API process and tool-worker must share it. */
  secret: string;
  /** PUBLIC_URL: where clients reach the API; links are absolute with it, paths without. */
  publicUrl?: string;
}

/**
 * Signed links that answer one request for an answer without an API key: the one tenant of how a
 * link's token is made and checked. A token is an HMAC over the request's id and its expiry, so
 * it opens that request only, and only until its expiry; whether it was used is the store's to
 * say (a request is decided once).
 */
export class ActionLinks {
  readonly #secret: Buffer;
  readonly #base: string;

  constructor(opts: ActionLinkOptions) {
    if (opts.secret.length < MIN_ACTION_LINK_SECRET_CHARS)
      throw new Error(`an action link secret must be at least ${MIN_ACTION_LINK_SECRET_CHARS} characters`);
    this.#secret = Buffer.from(opts.secret, 'utf8');
    this.#base = opts.publicUrl ? opts.publicUrl.replace(/\/+$/, '') : '';
  }

  /** The token of request `id` expiring at `expiresAt` (ISO time; null: never). */
  token(id: string, expiresAt: string | null): string {
    const ms = expiresAt === null ? NaN : Date.parse(expiresAt);
    const expiry = Number.isFinite(ms) && ms > 0 ? String(Math.floor(ms)) : NO_EXPIRY;
    return `${expiry}.${this.#sign(id, expiry)}`;
  }

  /** The link that answers request `id`: absolute with PUBLIC_URL, else a path. */
  url(id: string, expiresAt: string | null): string {
    return `${this.#base}${actionRespondPath(id)}?token=${this.token(id, expiresAt)}`;
  }

  /** The item with its `respond_url` (for `required_action.items`, the inbox, webhooks). */
  readonly decorate = (item: ActionItemView): ActionItemView => ({
    ...item,
    respond_url: this.url(item.id, item.expires_at),
  });

  /**
   * Whether `token` opens request `id` at `now`. Anything not a well-formed token signed for this
   * id is `invalid`, told apart from nothing else; the signatures are compared in constant time.
   */
  check(id: string, token: unknown, now = Date.now()): ActionLinkCheck {
    if (typeof token !== 'string' || !parseActionId(id)) return 'invalid';
    const m = TOKEN.exec(token);
    if (!m) return 'invalid';
    const [, expiry, signature] = m;
    if (!timingSafeEqual(Buffer.from(signature, 'latin1'), Buffer.from(this.#sign(id, expiry), 'latin1')))
      return 'invalid';
    if (expiry !== NO_EXPIRY && Number(expiry) <= now) return 'expired';
    return 'valid';
  }

  #sign(id: string, expiry: string): string {
    // The id is `act_<base36>_<n>_<n>` and the expiry digits or `n`: neither holds a newline.
    return createHmac('sha256', this.#secret).update(`${PURPOSE}\n${id}\n${expiry}`).digest('base64url');
  }
}

import { WebhookVerificationError } from './errors.js';
import type { WebhookPayload } from './types.js';

export interface VerifyWebhookOptions {
  /** The signing secret: `whsec_<base64>` (Standard Webhooks) or any other text, used as is. */
  secret: string;
  /** The request's headers: a `Headers`, or a plain object such as Node's `req.headers`. */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The raw body, exactly as received (not re-serialised JSON). */
  body: string | Uint8Array;
  /** How far `webhook-timestamp` may be from now, in seconds. @defaultValue 300 */
  toleranceSeconds?: number;
  /** The current time, for tests. @defaultValue Date.now() */
  now?: number;
}

const header = (h: VerifyWebhookOptions['headers'], name: string): string | undefined => {
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const v =
    (h as Record<string, string | string[] | undefined>)[name] ??
    Object.entries(h).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(v) ? v.join(' ') : v;
};

function secretKey(secret: string): Uint8Array {
  if (!secret.startsWith('whsec_')) return new TextEncoder().encode(secret);
  const bin = atob(secret.slice(6));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

function fromBase64(s: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

// Constant time in the content: every byte is compared whatever the first difference.
function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/**
 * Verifies a webhook per the Standard Webhooks spec (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, several
 * space-separated signatures allowed) and returns its parsed payload; throws
 * `WebhookVerificationError` if a header is missing, the timestamp is outside the tolerance or
 * no signature matches. Deduplicate deliveries on `webhook-id`: retries keep it.
 */
export async function verifyWebhook(opts: VerifyWebhookOptions): Promise<WebhookPayload> {
  const id = header(opts.headers, 'webhook-id');
  const ts = header(opts.headers, 'webhook-timestamp');
  const sigs = header(opts.headers, 'webhook-signature');
  if (!id || !ts || !sigs)
    throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  if (!/^\d+$/.test(ts)) throw new WebhookVerificationError('webhook-timestamp is not unix seconds');
  const tolerance = opts.toleranceSeconds ?? 300;
  const now = Math.floor((opts.now ?? Date.now()) / 1000);
  if (Math.abs(now - Number(ts)) > tolerance)
    throw new WebhookVerificationError(`webhook-timestamp is more than ${tolerance} s from now`);

  // Signed over the raw bytes, so a body that is not valid UTF-8 cannot be re-encoded into a match.
  const body = typeof opts.body === 'string' ? new TextEncoder().encode(opts.body) : opts.body;
  const head = new TextEncoder().encode(`${id}.${ts}.`);
  const signed = new Uint8Array(head.length + body.length);
  signed.set(head);
  signed.set(body, head.length);
  const key = await crypto.subtle.importKey(
    'raw',
    secretKey(opts.secret) as Uint8Array<ArrayBuffer>,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const expected = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed));
  let ok = false;
  for (const entry of sigs.split(' ')) {
    const [version, sig] = entry.split(',', 2);
    if (version !== 'v1' || !sig) continue;
    const given = fromBase64(sig);
    if (given && equal(given, expected)) ok = true;
  }
  if (!ok) throw new WebhookVerificationError('no webhook-signature matches the body and secret');
  try {
    return JSON.parse(new TextDecoder().decode(body)) as WebhookPayload;
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
}

import { createHmac } from 'node:crypto';

/** The key bytes of a secret: `whsec_<base64>` as the Standard Webhooks spec gives it, else the raw text. */
export function webhookKey(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` per the Standard Webhooks spec. */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', webhookKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

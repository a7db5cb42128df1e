import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { WebhookVerificationError } from './errors.js';
import { verifyWebhook } from './webhook.js';

const sign = (key: Buffer, id: string, ts: number, body: string) =>
  `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`;

describe('verifyWebhook', () => {
  const body = JSON.stringify({ type: 'run.completed', timestamp: '2026-01-01T00:00:00.000Z', data: { id: 'run_1' } });
  const ts = 1_700_000_000;
  const now = ts * 1000;

  it('decodes whsec_ secrets from base64 and uses other secrets as UTF-8', async () => {
    const key = Buffer.from('0123456789abcdef0123456789abcdef');
    const headers = {
      'webhook-id': 'whk_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': sign(key, 'whk_1', ts, body),
    };
    await expect(
      verifyWebhook({ secret: `whsec_${key.toString('base64')}`, headers, body, now }),
    ).resolves.toMatchObject({ data: { id: 'run_1' } });
    const raw = { ...headers, 'webhook-signature': sign(Buffer.from('pässword', 'utf8'), 'whk_1', ts, body) };
    await expect(verifyWebhook({ secret: 'pässword', headers: raw, body, now })).resolves.toBeTruthy();
    await expect(
      verifyWebhook({ secret: `whsec_${key.toString('base64')}`, headers: raw, body, now }),
    ).rejects.toBeInstanceOf(WebhookVerificationError);
  });

  it('ignores other signature versions and malformed entries', async () => {
    const key = Buffer.from('k');
    const good = sign(key, 'whk_1', ts, body);
    const headers = {
      'webhook-id': 'whk_1',
      'webhook-timestamp': String(ts),
      'webhook-signature': `v2,${good.slice(3)} v1,!!notbase64 v1a,xyz ${good}`,
    };
    await expect(verifyWebhook({ secret: 'k', headers, body, now })).resolves.toBeTruthy();
    await expect(
      verifyWebhook({ secret: 'k', headers: { ...headers, 'webhook-signature': `v2,${good.slice(3)}` }, body, now }),
    ).rejects.toThrow(/no webhook-signature/);
    await expect(
      verifyWebhook({ secret: 'k', headers: { ...headers, 'webhook-timestamp': '17e8' }, body, now }),
    ).rejects.toThrow(/unix seconds/);
  });
});

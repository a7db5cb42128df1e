import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { FatalError, type ActionItemView, type WebhookDelivery } from '@agentq/shared/core';
import {
  connectLookup,
  NonPublicAddressError,
  refuseNonPublicHost,
  type Logger,
  type Resolver,
} from '@agentq/shared/infra';
import { type RunStore } from '@agentq/shared/store';
import { type JobContext, type WebhookJob } from '@agentq/shared/jobs';
import { withRequiredAction } from '@agentq/shared/runs';
import { signWebhook } from './webhook-signature.js';

export interface WebhookDeliveryOptions {
  store: RunStore;
  logger: Logger;
  defaultSecret?: string;
  allowPrivate: boolean;
  timeoutMs: number;
  /** How the receiver's name is resolved when connecting. @defaultValue `dns.lookup` */
  resolve?: Resolver;
  /** Adds to each request for an answer in a `run.requires_action` payload (a signed link). */
  decorateAction?: (item: ActionItemView) => ActionItemView;
}

/**
 * POSTs once to `url`, connecting through `lookup` (so to the address it checked), following no
 * redirect; resolves with the status without reading the body.
 */
function post(
  url: URL,
  o: { headers: Record<string, string>; body: string; lookup: LookupFunction; signal: AbortSignal },
): Promise<number> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    // A fresh connection per attempt (no pool): a socket another lookup opened is never reused.
    const req = send(
      url,
      {
        method: 'POST',
        headers: { ...o.headers, 'content-length': String(Buffer.byteLength(o.body)) },
        lookup: o.lookup,
        agent: false,
        signal: o.signal,
      },
      (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

/** Delivers one webhook attempt; throws to retry, FatalError to stop. */
export async function deliverWebhook(
  data: WebhookJob,
  ctx: JobContext,
  o: WebhookDeliveryOptions,
): Promise<{ status: number }> {
  const { runId, webhookId, type } = data;
  const { job } = ctx;
  const state = await o.store.runs.getState(runId);
  const found = await o.store.runs.get(runId);
  // `run.requires_action` carries what waits (as it is when the webhook is sent).
  const run = found ? await withRequiredAction(o.store, found, o.decorateAction) : null;
  if (!state?.spec.webhook || !run) throw new FatalError(`run ${runId} or its webhook is gone`, 'webhook_gone');
  const { url } = state.spec.webhook;
  const secret = state.spec.webhook.secret ?? o.defaultSecret;
  const attempt = job.attemptsMade + 1;
  const started = Date.now();
  const record = async (status: number | null, error: string | null) => {
    // One attempt as listed at `GET /v1/runs/:id/webhook-deliveries`.
    const a: WebhookDelivery = {
      webhook_id: webhookId,
      type,
      attempt,
      url,
      at: new Date(started).toISOString(),
      status_code: status,
      error,
      duration_ms: Date.now() - started,
      success: status !== null && status >= 200 && status < 300,
    };
    await o.store.webhooks.record(runId, a);
  };

  if (!secret) {
    await record(null, 'no signing secret (webhook.secret or WEBHOOK_SECRET)');
    throw new FatalError('no webhook secret', 'webhook_no_secret');
  }
  // DNS can change between submission and delivery, and between two lookups: the address is
  // checked where the connection is made (connectLookup), and an address in the URL here.
  if (!o.allowPrivate) {
    const why = refuseNonPublicHost(url);
    if (why) {
      await record(null, `refused: the URL ${why}`);
      throw new FatalError(`webhook URL refused: ${why}`, 'webhook_refused');
    }
  }
  const body = JSON.stringify({ type, timestamp: run.completed_at ?? new Date().toISOString(), data: run });
  const ts = Math.floor(Date.now() / 1000);
  const signal = AbortSignal.timeout(o.timeoutMs);
  let status: number;
  try {
    status = await post(new URL(url), {
      lookup: connectLookup({ resolve: o.resolve, allowPrivate: o.allowPrivate }),
      signal,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agentq-webhooks/1',
        'webhook-id': webhookId,
        'webhook-timestamp': String(ts),
        'webhook-signature': signWebhook(secret, webhookId, ts, body),
      },
      body,
    });
  } catch (err) {
    if (err instanceof NonPublicAddressError) {
      await record(null, `refused: ${err.message}`);
      throw new FatalError(`webhook URL refused: ${err.message}`, 'webhook_refused');
    }
    const e = err as NodeJS.ErrnoException;
    const msg = signal.aborted
      ? `timed out after ${o.timeoutMs} ms`
      : `${e.message}${e.code && !e.message.includes(e.code) ? ` (${e.code})` : ''}`;
    await record(null, msg);
    throw new Error(`webhook delivery failed: ${msg}`);
  }
  if (status >= 200 && status < 300) {
    await record(status, null);
    o.logger.info({ run_id: runId, job_id: job.id, webhook_id: webhookId, status, attempt }, 'webhook delivered');
    return { status };
  }
  // 410 Gone: the receiver asks us to stop.
  if (status === 410) {
    await record(status, 'receiver answered 410 Gone: no more attempts');
    throw new FatalError('webhook receiver answered 410 Gone', 'webhook_gone');
  }
  await record(status, status >= 300 && status < 400 ? 'redirects are not followed' : `receiver answered ${status}`);
  throw new Error(`webhook receiver answered ${status}`);
}

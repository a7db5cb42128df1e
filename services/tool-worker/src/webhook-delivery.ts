import { UnrecoverableError, Worker, type Job, type Telemetry } from 'bullmq';
import type { Redis } from 'ioredis';
import { createRedis, QUEUES, refuseNonPublicUrl, webhookJobSchema, type Logger, type RunStore, type WebhookDelivery } from '@agentq/shared';
import { signWebhook } from './webhook-signature.js';

export interface WebhookDeliveryOptions {
  store: RunStore;
  redis: Redis;
  logger: Logger;
  defaultSecret?: string;
  allowPrivate: boolean;
  /** First retry delay; doubles per attempt with ±20 % jitter. @defaultValue 10000 (10 attempts span ≈ 85 min) */
  backoffBaseMs: number;
  timeoutMs: number;
  /** BullMQ's own spans (bullmq-otel), when tracing is on. */
  telemetry?: Telemetry;
}

/** Exponential backoff with jitter for webhook retries. */
export function webhookBackoff(attemptsMade: number, baseMs: number, random = Math.random): number {
  const exp = baseMs * 2 ** Math.max(0, attemptsMade - 1);
  return Math.round(exp * (0.8 + 0.4 * random()));
}

/** Delivers one webhook attempt; throws to retry, UnrecoverableError to stop. */
export async function deliverWebhook(job: Job, o: WebhookDeliveryOptions): Promise<{ status: number }> {
  const { runId, webhookId, type } = webhookJobSchema.parse(job.data);
  const state = await o.store.getState(runId);
  const run = await o.store.getRun(runId);
  if (!state?.spec.webhook || !run) throw new UnrecoverableError(`run ${runId} or its webhook is gone`);
  const { url } = state.spec.webhook;
  const secret = state.spec.webhook.secret ?? o.defaultSecret;
  const attempt = job.attemptsMade + 1;
  const started = Date.now();
  const record = async (status: number | null, error: string | null) => {
    // One attempt as listed at `GET /v1/runs/:id/webhook-deliveries`.
    const a: WebhookDelivery = { webhook_id: webhookId, type, attempt, url, at: new Date(started).toISOString(), status_code: status, error, duration_ms: Date.now() - started, success: status !== null && status >= 200 && status < 300 };
    const key = o.store.global.webhookDeliveries(runId);
    await o.redis.multi().rpush(key, JSON.stringify(a)).expire(key, o.store.retentionSeconds).exec();
  };

  if (!secret) {
    await record(null, 'no signing secret (webhook.secret or WEBHOOK_SECRET)');
    throw new UnrecoverableError('no webhook secret');
  }
  // DNS can change between submission and delivery: check the address again.
  if (!o.allowPrivate) {
    const why = await refuseNonPublicUrl(url);
    if (why) {
      await record(null, `refused: the URL ${why}`);
      throw new UnrecoverableError(`webhook URL refused: ${why}`);
    }
  }
  const body = JSON.stringify({ type, timestamp: run.completed_at ?? new Date().toISOString(), data: run });
  const ts = Math.floor(Date.now() / 1000);
  let status: number;
  try {
    const res = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      signal: AbortSignal.timeout(o.timeoutMs),
      headers: {
        'content-type': 'application/json',
        'user-agent': 'agentq-webhooks/1',
        'webhook-id': webhookId,
        'webhook-timestamp': String(ts),
        'webhook-signature': signWebhook(secret, webhookId, ts, body),
      },
      body,
    });
    status = res.status;
    await res.body?.cancel().catch(() => {});
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const msg = e.name === 'TimeoutError' ? `timed out after ${o.timeoutMs} ms` : `${e.message}${e.cause?.code ? ` (${e.cause.code})` : ''}`;
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
    throw new UnrecoverableError('webhook receiver answered 410 Gone');
  }
  await record(status, status >= 300 && status < 400 ? 'redirects are not followed' : `receiver answered ${status}`);
  throw new Error(`webhook receiver answered ${status}`);
}

/** Starts the webhook delivery worker (it runs in the tool-worker process). */
export function startWebhookWorker(redisUrl: string, prefix: string, o: WebhookDeliveryOptions, concurrency = 20): Worker {
  const worker = new Worker(QUEUES.webhook, (job) => deliverWebhook(job, o), {
    connection: createRedis(redisUrl, { name: 'agentq-webhook-worker', blocking: true }),
    prefix,
    concurrency,
    settings: { backoffStrategy: (attemptsMade: number) => webhookBackoff(attemptsMade, o.backoffBaseMs) },
    telemetry: o.telemetry,
  });
  worker.on('error', (err) => o.logger.error({ err: err.message }, 'webhook worker error'));
  worker.on('failed', (job, err) => o.logger.warn({ run_id: job?.data.runId, job_id: job?.id, attempt: job?.attemptsMade, err: err.message }, 'webhook attempt failed'));
  return worker;
}

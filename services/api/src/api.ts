import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Queue } from 'bullmq';
import { createMetrics, createRedis, QUEUES, quietConnectionErrors, RunStore, runMetricsObserver, waitForReady, type Logger, type Tracing } from '@agentq/shared';
import { createApp } from './app.js';
import { EventHub } from './event-hub.js';
import type { ApiConfig } from './config.js';

export interface ApiHandle {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the API server; returns its URL and a close that drains it. */
export async function startApi(cfg: ApiConfig, logger: Logger, opts: { tracing?: Tracing } = {}): Promise<ApiHandle> {
  if (cfg.API_KEYS.length === 0) logger.warn('API_KEYS is not set: the API is open to anyone who can reach it');
  // Request-path connections fail fast, so a request during a Redis outage gets a 503, not a hang.
  const redis = createRedis(cfg.REDIS_URL, { name: 'agentq-api' });
  const queueRedis = createRedis(cfg.REDIS_URL, { name: 'agentq-api-queue' });
  if (!(await waitForReady(redis)) || !(await waitForReady(queueRedis))) logger.warn('Redis is not reachable yet; answering 503 until it is');
  const queues = Object.values(QUEUES).map((name) => quietConnectionErrors(new Queue(name, { connection: queueRedis, prefix: cfg.QUEUE_PREFIX, telemetry: opts.tracing?.bullmq }), logger, `${name} queue`));
  const metrics = createMetrics({ service: 'api', queues, onQueueError: (err) => logger.warn({ err: err.message }, 'could not read queue depths for /metrics') });
  const store = new RunStore({ redis, prefix: cfg.QUEUE_PREFIX, retentionSeconds: cfg.RUN_RETENTION_SECONDS, observer: runMetricsObserver(metrics) });
  const agentQueue = queues.find((q) => q.name === QUEUES.agent)!;
  const webhookQueue = queues.find((q) => q.name === QUEUES.webhook)!;
  // One blocking connection follows the event streams of every SSE client of this process.
  const hub = new EventHub(createRedis(cfg.REDIS_URL, { name: 'agentq-api-events', blocking: true }), redis, logger);
  hub.start();
  const app = createApp({
    store,
    redis,
    hub,
    agentQueue,
    webhookQueue,
    webhookSecret: cfg.WEBHOOK_SECRET,
    webhookAllowPrivate: cfg.WEBHOOK_ALLOW_PRIVATE,
    queues,
    metrics,
    logger,
    apiKeys: cfg.API_KEYS,
    adminKeys: cfg.ADMIN_API_KEYS,
    defaultModel: cfg.MODEL,
    limits: { maxBodyBytes: cfg.MAX_BODY_BYTES, maxInputBytes: cfg.MAX_INPUT_BYTES, maxContextBytes: cfg.MAX_CONTEXT_BYTES },
  });
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: cfg.PORT, hostname: cfg.HOST }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${cfg.HOST === '0.0.0.0' ? '127.0.0.1' : cfg.HOST}:${port}`;
  logger.info({ url, dashboard: `${url}/admin/queues` }, 'api listening');
  return {
    url,
    port,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await hub.close();
      for (const q of queues) await q.close().catch(() => {});
      await redis.quit().catch(() => {});
      await queueRedis.quit().catch(() => {});
    },
  };
}

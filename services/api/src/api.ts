import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { SchemaValidators } from '@agentq/shared/core';
import {
  createMetrics,
  RedisConnections,
  runMetricsObserver,
  untilRedisAnswers,
  waitForReady,
  type Logger,
  type Resolver,
  type Tracing,
} from '@agentq/shared/infra';
import { RunStore } from '@agentq/shared/store';
import { JobQueues } from '@agentq/shared/jobs';
import { ActionLinks, Admission, RunActions, Runs, UsageMeter, type TenantTable } from '@agentq/shared/runs';
import { loadTenants } from './tenants-config.js';
import { BodyBudget } from './body-budget.js';
import { createApp, type AppDeps } from './app.js';
import { EventHub } from './event-hub.js';
import { ResponseBudget } from './response-budget.js';
import { StreamSlots } from './stream-slots.js';
import { startPendingSweep } from './pending-sweep.js';
import type { ApiConfig } from './config.js';

export interface ApiHandle {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** What the API's routes work with, and the close that releases it (in reverse order of making). */
export interface ApiContext {
  deps: AppDeps;
  close(): Promise<void>;
}

/** What the API takes besides its configuration. */
export interface ApiOptions {
  tracing?: Tracing;
  /** Per-key limits; by default from TENANTS_CONFIG. */
  tenants?: TenantTable;
  /**
   * How webhook hosts are resolved at submission (a test's DNS).
   * @defaultValue bounded DNS queries (boundedDnsResolver)
   */
  resolve?: Resolver;
}

/** Connects what the API needs (Redis, queues, the event hub) for `createApp`; tests use it without a server. */
export async function createApiContext(cfg: ApiConfig, logger: Logger, opts: ApiOptions = {}): Promise<ApiContext> {
  if (cfg.API_KEYS.length === 0) logger.warn('API_KEYS is not set: the API is open to anyone who can reach it');
  const redis = new RedisConnections(cfg.REDIS_URL);
  // Request-path connections fail fast, so a request during a Redis outage gets a 503, not a hang.
  const requests = redis.connect('agentq-api');
  const queueConnection = redis.connect('agentq-api-queue');
  // Logs why Redis cannot be reached, until it answers or the API closes.
  const stopWaiting = new AbortController();
  if (!(await waitForReady(requests)) || !(await waitForReady(queueConnection))) {
    void untilRedisAnswers(cfg.REDIS_URL, logger, {
      waiting: 'Redis is not reachable yet; answering 503 until it is',
      signal: stopWaiting.signal,
    }).catch(() => {});
  }
  const jobs = new JobQueues({
    connection: queueConnection,
    prefix: cfg.QUEUE_PREFIX,
    cells: cfg.CELLS,
    logger,
    telemetry: opts.tracing?.bullmq,
  });
  const queues = jobs.all();
  const responses = new ResponseBudget(cfg.MAX_RESPONSES_IN_FLIGHT_BYTES);
  const bodies = new BodyBudget({ maxInFlightBytes: cfg.MAX_BODIES_IN_FLIGHT_BYTES, maxBodyBytes: cfg.MAX_BODY_BYTES });
  const streams = new StreamSlots({ total: cfg.MAX_EVENT_STREAMS, perKey: cfg.MAX_EVENT_STREAMS_PER_KEY });
  const metrics = createMetrics({
    service: 'api',
    queues,
    onQueueError: (err) => logger.warn({ err: err.message }, 'could not read queue depths for /metrics'),
    responsesInFlight: () => ({ held: responses.bytesInFlight, waiting: responses.waiting, streams: streams.size }),
    bodiesInFlight: () => bodies.bytesInFlight,
  });
  const store = new RunStore({
    redis: requests,
    prefix: cfg.QUEUE_PREFIX,
    retentionSeconds: cfg.RUN_RETENTION_SECONDS,
  });
  const tenants = opts.tenants ?? loadTenants(cfg.TENANTS_CONFIG);
  const admission = new Admission(requests, cfg.QUEUE_PREFIX);
  await admission
    .publish(tenants)
    .catch((err: Error) => logger.warn({ err: err.message }, "could not publish the keys' limits yet; the sweep will"));
  const failpoint = cfg.AGENTQ_FAILPOINT;
  const failAt = failpoint ? (point: string) => point === failpoint && process.kill(process.pid, 'SIGKILL') : undefined;
  const runs = new Runs({
    store,
    jobs,
    admission,
    logger,
    observer: runMetricsObserver(metrics),
    publisher: requests,
    durability: {
      replicas: cfg.REDIS_WAIT_REPLICAS,
      timeoutMs: cfg.REDIS_WAIT_TIMEOUT_MS,
      connections: [requests, queueConnection],
    },
    ...(failAt ? { failpoint: failAt } : {}),
  });
  const actions = new RunActions({ store, jobs, runs, logger, ...(failAt ? { failpoint: failAt } : {}) });
  const stopSweep = startPendingSweep(runs, logger, {
    intervalMs: cfg.PENDING_SWEEP_INTERVAL_MS,
    graceMs: cfg.PENDING_SWEEP_GRACE_MS,
    // Answers whose process died before waking their job are woken.
    answered: (graceMs) => actions.sweepAnswered(graceMs),
    // Now and then, slots held by runs whose process died are freed, and the limits published again.
    reconcile: async () => {
      await admission.publish(tenants);
      await runs.reconcileAdmission();
    },
  });
  // One blocking connection follows the event streams of every SSE client of this process.
  const hub = new EventHub(redis.connect('agentq-api-events', { blocking: true }), requests, logger);
  hub.start();
  const actionLinks = cfg.ACTION_LINK_SECRET
    ? new ActionLinks({ secret: cfg.ACTION_LINK_SECRET, publicUrl: cfg.PUBLIC_URL })
    : undefined;
  const deps: AppDeps = {
    store,
    runs,
    actions,
    actionLinks,
    decorateAction: actionLinks?.decorate,
    validators: new SchemaValidators(logger),
    admission,
    usage: new UsageMeter(requests, cfg.QUEUE_PREFIX),
    tenants,
    redis: requests,
    hub,
    webhookSecret: cfg.WEBHOOK_SECRET,
    webhookAllowPrivate: cfg.WEBHOOK_ALLOW_PRIVATE,
    webhookResolve: opts.resolve,
    queues,
    metrics,
    logger,
    apiKeys: cfg.API_KEYS,
    adminKeys: cfg.ADMIN_API_KEYS,
    defaultModel: cfg.MODEL,
    limits: {
      maxBodyBytes: cfg.MAX_BODY_BYTES,
      maxInputBytes: cfg.MAX_INPUT_BYTES,
      maxContextBytes: cfg.MAX_CONTEXT_BYTES,
    },
    bodies,
    responses,
    streams,
    keepAliveMs: Math.min(15_000, Math.floor(cfg.CLIENT_IDLE_TIMEOUT_MS / 3)),
  };
  return {
    deps,
    async close() {
      stopWaiting.abort();
      await stopSweep();
      await hub.close();
      await jobs.close();
      await redis.closeAll();
    },
  };
}

/** Starts the API server; returns its URL and a close that drains it. */
export async function startApi(cfg: ApiConfig, logger: Logger, opts: ApiOptions = {}): Promise<ApiHandle> {
  const ctx = await createApiContext(cfg, logger, opts);
  const app = createApp(ctx.deps);
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: cfg.PORT, hostname: cfg.HOST }, () => resolve(s));
  });
  // A connection that makes no progress for this long is closed (no 'timeout' listener: Node
  // destroys the socket), and with it what its answer held.
  server.setTimeout(cfg.CLIENT_IDLE_TIMEOUT_MS);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${cfg.HOST === '0.0.0.0' ? '127.0.0.1' : cfg.HOST}:${port}`;
  logger.info({ url, ui: `${url}/ui`, dashboard: `${url}/admin/queues` }, 'api listening');
  return {
    url,
    port,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
      await ctx.close();
    },
  };
}

import type { Worker } from 'bullmq';
import { BUILTIN_TOOL_NAMES } from '@agentq/shared/core';
import {
  createMetrics,
  observeWebhookDeliveries,
  observeWorkerJobs,
  RedisConnections,
  runMetricsObserver,
  startMetricsServer,
  type Logger,
  type MetricsServer,
  type Resolver,
  type Tracing,
  untilRedisAnswers,
} from '@agentq/shared/infra';
import { RunStore, type ToolCatalogEntry } from '@agentq/shared/store';
import {
  cellList,
  createJobWorker,
  JobQueues,
  workerLockOptions,
  type JobContext,
  type ToolCallsJob,
} from '@agentq/shared/jobs';
import { ActionLinks, Admission, CancelListener, RunActions, Runs } from '@agentq/shared/runs';
import type { ToolWorkerConfig } from './config.js';
import { SearchThreads } from './builtin/search-threads.js';
import type { McpConfig } from './mcp-config.js';
import { McpRegistry, type ToolDescriptor } from './mcp-registry.js';
import { AnswerBytesInFlight, defaultAnswerBytesInFlight } from './answer-bytes.js';
import { CallSlots } from './call-slots.js';
import { failedCalls } from './failed-calls.js';
import { releaseNextStep } from './next-step.js';
import { processToolCall, type RoundCall, type ToolCallDeps } from './tool-call-processor.js';
import { processToolCalls } from './tool-calls-processor.js';
import { RunSpecCache } from './run-spec-cache.js';
import { traceToolCall } from './tool-telemetry.js';
import { deliverWebhook } from './webhook-delivery.js';

export interface ToolWorkerHandle {
  /** One BullMQ worker per cell served (tool calls); webhooks have their own. */
  workers: Worker[];
  registry: McpRegistry;
  /** Where `/metrics` is served, when METRICS_PORT is set. */
  metricsUrl?: string;
  close(): Promise<void>;
}

function catalogOf(tools: ToolDescriptor[]): ToolCatalogEntry[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: t.input_schema,
    server: t.server,
    ...(t.annotations ? { annotations: t.annotations } : {}),
  }));
}

/**
 * Starts a tool-worker: connects the MCP servers of its mcp.json once, publishes their tools
 * to Redis (where the API lists them and agent-workers offer them), runs tool-call jobs and
 * delivers webhooks.
 */
export async function startToolWorker(
  cfg: ToolWorkerConfig,
  logger: Logger,
  opts: {
    mcpConfig: McpConfig;
    tracing?: Tracing /** How webhook hosts are resolved (a test's DNS); default bounded DNS queries (boundedDnsResolver), with WEBHOOK_ALLOW_PRIVATE the hosts file, DNS and a bounded system lookup (privateNetworkResolver). */;
    resolve?: Resolver;
  },
): Promise<ToolWorkerHandle> {
  await untilRedisAnswers(cfg.REDIS_URL, logger);
  const answersInFlight = new AnswerBytesInFlight(
    cfg.MCP_ANSWERS_IN_FLIGHT_MB !== undefined
      ? Math.floor(cfg.MCP_ANSWERS_IN_FLIGHT_MB * 1024 * 1024)
      : defaultAnswerBytesInFlight(),
    cfg.MCP_MESSAGE_MAX_BYTES,
  );
  const metrics = createMetrics({ service: 'tool-worker', mcpAnswersInFlight: () => answersInFlight.stats() });
  const telemetry = opts.tracing?.bullmq;
  const registry = new McpRegistry({
    config: opts.mcpConfig,
    logger,
    maxMessageBytes: cfg.MCP_MESSAGE_MAX_BYTES,
    answersInFlight,
  });
  await registry.start();

  const redis = new RedisConnections(cfg.REDIS_URL);
  // One connection for the store and the BullMQ worker's own commands (BullMQ keeps the worker's
  // blocking fetch on a copy of it).
  const workerRedis = redis.connect('agentq-tool-worker', { blocking: true });
  const store = new RunStore({
    redis: workerRedis,
    prefix: cfg.QUEUE_PREFIX,
    retentionSeconds: cfg.RUN_RETENTION_SECONDS,
  });
  const publish = async () => {
    await store.catalog
      .set(catalogOf(registry.tools()))
      .catch((err: Error) => logger.warn({ err: err.message }, 'could not publish the tool catalog'));
  };
  await publish();
  // Servers that connect late or change their tool list are published again.
  registry.onToolsChanged(() => void publish());
  const republish = setInterval(() => void publish(), 30_000);
  republish.unref();

  const jobs = new JobQueues({
    connection: redis.connect('agentq-tool-queues', { blocking: true }),
    prefix: cfg.QUEUE_PREFIX,
    cells: cfg.CELLS,
    logger,
    telemetry,
  });
  // The publisher tells every worker to abort the in-flight work of a tree ended here (endTree).
  const runs = new Runs({
    store,
    jobs,
    admission: new Admission(workerRedis, cfg.QUEUE_PREFIX),
    logger,
    observer: runMetricsObserver(metrics),
    publisher: workerRedis,
  });
  const searchThreads = new SearchThreads({
    size: cfg.CONTEXT_SEARCH_THREADS,
    timeoutMs: cfg.CONTEXT_SEARCH_TIMEOUT_MS,
  });
  const deps: ToolCallDeps = {
    store,
    runs,
    actions: new RunActions({ store, jobs, runs, logger }),
    actionParkMs: cfg.ACTION_PARK_MAX_MS,
    runner: registry,
    logger,
    toolTimeoutMs: cfg.TOOL_TIMEOUT_MS,
    outputMaxBytes: cfg.TOOL_OUTPUT_MAX_BYTES,
    searchThreads,
    specs: new RunSpecCache(),
    subrunRecheckMs: cfg.SUBRUN_RECHECK_MS,
  };
  const cancels = new CancelListener(redis.connect('agentq-tool-cancel', { blocking: true }), cfg.QUEUE_PREFIX);
  await cancels.start();
  const toolTelemetry = {
    metrics,
    isKnownTool: (name: string) => BUILTIN_TOOL_NAMES.has(name) || registry.tools().some((t) => t.name === name),
  };
  const cells = cellList(cfg.CELLS, cfg.WORKER_CELLS);
  // TOOL_CONCURRENCY bounds calls, not only jobs (a job may run several): per cell served, as
  // each cell's worker runs that many jobs.
  const slots = new CallSlots(cfg.TOOL_CONCURRENCY * cells.length);
  const runCall = (call: RoundCall, ctx: JobContext) =>
    slots.run(() => traceToolCall(call, ctx.job, toolTelemetry, () => processToolCall(call, ctx, deps)));
  const release = (data: ToolCallsJob, o: { roundComplete: boolean }) =>
    releaseNextStep({ store, runs, jobs }, data, o);
  const failed = failedCalls({ jobs, redis: workerRedis, store, logger, cells, lookbackMs: 24 * 3600_000, release });
  const workers = cells.map((cell) =>
    createJobWorker('toolCalls', (data, ctx) => processToolCalls(data, ctx, runCall, release), {
      connection: workerRedis,
      prefix: cfg.QUEUE_PREFIX,
      cell,
      cells: cfg.CELLS,
      concurrency: cfg.TOOL_CONCURRENCY,
      logger,
      cancels,
      telemetry,
      lock: workerLockOptions(cfg),
    }),
  );
  for (const w of workers) {
    observeWorkerJobs(w, metrics);
    failed.watch(w);
  }
  // `run.requires_action` payloads carry each item's signed link, made as the API makes it.
  const links = cfg.ACTION_LINK_SECRET
    ? new ActionLinks({ secret: cfg.ACTION_LINK_SECRET, publicUrl: cfg.PUBLIC_URL })
    : undefined;
  const webhookOptions = {
    store,
    logger,
    defaultSecret: cfg.WEBHOOK_SECRET,
    allowPrivate: cfg.WEBHOOK_ALLOW_PRIVATE,
    timeoutMs: cfg.WEBHOOK_TIMEOUT_MS,
    resolve: opts.resolve,
    decorateAction: links?.decorate,
  };
  const webhookRedis = redis.connect('agentq-webhook-worker', { blocking: true });
  const webhooks = cells.map((cell) =>
    createJobWorker('webhook', (data, ctx) => deliverWebhook(data, ctx, webhookOptions), {
      connection: webhookRedis,
      prefix: cfg.QUEUE_PREFIX,
      cell,
      cells: cfg.CELLS,
      concurrency: 20,
      logger,
      telemetry,
      backoffBaseMs: cfg.WEBHOOK_BACKOFF_BASE_MS,
    }),
  );
  for (const w of webhooks) {
    observeWorkerJobs(w, metrics);
    observeWebhookDeliveries(w, metrics);
  }
  await Promise.all([...workers, ...webhooks].map((w) => w.waitUntilReady()));
  failed.start(cfg.STALLED_INTERVAL_MS);
  const metricsServer: MetricsServer | undefined =
    cfg.METRICS_PORT !== undefined
      ? await startMetricsServer({ registry: metrics.registry, port: cfg.METRICS_PORT, host: cfg.HOST, logger })
      : undefined;
  logger.info(
    { queues: workers.map((w) => w.name), tools: registry.tools().length, concurrency: cfg.TOOL_CONCURRENCY },
    'tool-worker started',
  );

  return {
    workers,
    registry,
    metricsUrl: metricsServer?.url,
    async close() {
      clearInterval(republish);
      const steps = [
        () => Promise.all([...workers, ...webhooks].map((w) => w.close())),
        () => failed.close(),
        () => searchThreads.close(),
        async () => metricsServer?.close(),
        () => cancels.close(),
        () => jobs.close(),
        () => registry.close(),
        () => redis.closeAll(),
      ];
      for (const s of steps) await s().catch((err: Error) => logger.warn({ err: err.message }, 'error while closing'));
    },
  };
}

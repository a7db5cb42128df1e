import { Queue, Worker } from 'bullmq';
import {
  BUILTIN_TOOL_NAMES,
  CancelListener,
  ContextStore,
  createMetrics,
  createRedis,
  quietConnectionErrors,
  observeWebhookDeliveries,
  observeWorkerJobs,
  QUEUES,
  RunStore,
  runMetricsObserver,
  startMetricsServer,
  workerLockOptions,
  type Logger,
  type MetricsServer,
  type ToolCatalogEntry,
  type Tracing,
} from '@agentq/shared';
import type { ToolWorkerConfig } from './config.js';
import { loadMcpConfig, type McpConfig } from './mcp-config.js';
import { McpRegistry, type ToolDescriptor } from './mcp-registry.js';
import { processToolCall } from './tool-call-processor.js';
import { traceToolCall } from './tool-telemetry.js';
import { startWebhookWorker } from './webhook-delivery.js';

export interface ToolWorkerHandle {
  worker: Worker;
  registry: McpRegistry;
  /** Where `/metrics` is served, when METRICS_PORT is set. */
  metricsUrl?: string;
  close(): Promise<void>;
}

function catalogOf(tools: ToolDescriptor[]): ToolCatalogEntry[] {
  return tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.input_schema, server: t.server, ...(t.annotations ? { annotations: t.annotations } : {}) }));
}

/**
 * Starts a tool-worker: connects the MCP servers of `MCP_CONFIG` once, publishes their tools
 * to Redis (where the API lists them and agent-workers offer them), and runs tool-call jobs.
 */
export async function startToolWorker(cfg: ToolWorkerConfig, logger: Logger, opts: { mcpConfig?: McpConfig; tracing?: Tracing } = {}): Promise<ToolWorkerHandle> {
  const metrics = createMetrics({ service: 'tool-worker' });
  const telemetry = opts.tracing?.bullmq;
  const mcpConfig = opts.mcpConfig ?? (cfg.MCP_CONFIG ? loadMcpConfig(cfg.MCP_CONFIG) : { mcpServers: {} });
  const registry = new McpRegistry({ config: mcpConfig, logger });
  await registry.start();

  // One connection for the store and the BullMQ worker's own commands (BullMQ keeps the worker's
  // blocking fetch on a copy of it): a tool result is stored before its job completes, with no
  // round trip in between, since Redis runs one connection's commands in the order they were sent.
  const storeRedis = createRedis(cfg.REDIS_URL, { name: 'agentq-tool-worker', blocking: true });
  const store = new RunStore({ redis: storeRedis, prefix: cfg.QUEUE_PREFIX, retentionSeconds: cfg.RUN_RETENTION_SECONDS, observer: runMetricsObserver(metrics) });
  const publish = async () => {
    await store.setToolCatalog(catalogOf(registry.tools())).catch((err: Error) => logger.warn({ err: err.message }, 'could not publish the tool catalog'));
  };
  await publish();
  // Servers that connect late or change their tool list are published again.
  registry.onToolsChanged?.(() => void publish());
  const republish = setInterval(() => void publish(), 30_000);
  republish.unref();

  const agentQueue = quietConnectionErrors(new Queue(QUEUES.agent, { connection: createRedis(cfg.REDIS_URL, { name: 'agentq-tool-agent-queue', blocking: true }), prefix: cfg.QUEUE_PREFIX, telemetry }), logger, 'agent queue');
  const deps = {
    store,
    runner: registry,
    logger,
    toolTimeoutMs: cfg.TOOL_TIMEOUT_MS,
    outputMaxBytes: cfg.TOOL_OUTPUT_MAX_BYTES,
    contexts: new ContextStore(storeRedis, cfg.QUEUE_PREFIX),
    agentQueue,
  };
  const cancels = new CancelListener(createRedis(cfg.REDIS_URL, { name: 'agentq-tool-cancel', blocking: true }), cfg.QUEUE_PREFIX);
  await cancels.start();
  const toolTelemetry = { metrics, isKnownTool: (name: string) => BUILTIN_TOOL_NAMES.has(name) || registry.tools().some((t) => t.name === name) };
  const worker = new Worker(
    QUEUES.tool,
    async (job, token, signal) => {
      const tracked = cancels.track(job.data.runId, job.id!, signal);
      try {
        return await traceToolCall(job, toolTelemetry, () => processToolCall(job, deps, tracked.signal, token));
      } finally {
        tracked.release();
      }
    },
    {
    connection: storeRedis,
    prefix: cfg.QUEUE_PREFIX,
    concurrency: cfg.TOOL_CONCURRENCY,
    ...workerLockOptions(cfg),
    telemetry,
    },
  );
  worker.on('error', (err) => logger.error({ err: err.message }, 'tool worker error'));
  worker.on('failed', (job, err) => logger.warn({ run_id: job?.data.runId, job_id: job?.id, depth: job?.data.depth, tool: job?.data.name, err: err.message }, 'tool call attempt failed'));
  observeWorkerJobs(worker, metrics);
  const webhooks = startWebhookWorker(cfg.REDIS_URL, cfg.QUEUE_PREFIX, {
    store,
    redis: storeRedis,
    logger,
    defaultSecret: cfg.WEBHOOK_SECRET,
    allowPrivate: cfg.WEBHOOK_ALLOW_PRIVATE,
    backoffBaseMs: cfg.WEBHOOK_BACKOFF_BASE_MS,
    timeoutMs: cfg.WEBHOOK_TIMEOUT_MS,
    telemetry,
  });
  observeWorkerJobs(webhooks, metrics);
  observeWebhookDeliveries(webhooks, metrics);
  await Promise.all([worker.waitUntilReady(), webhooks.waitUntilReady()]);
  const metricsServer: MetricsServer | undefined =
    cfg.METRICS_PORT !== undefined ? await startMetricsServer({ registry: metrics.registry, port: cfg.METRICS_PORT, host: cfg.HOST, logger }) : undefined;
  logger.info({ queue: QUEUES.tool, tools: registry.tools().length, concurrency: cfg.TOOL_CONCURRENCY }, 'tool-worker started');

  return {
    worker,
    registry,
    metricsUrl: metricsServer?.url,
    async close() {
      clearInterval(republish);
      const steps = [() => worker.close(), () => webhooks.close(), async () => metricsServer?.close(), () => agentQueue.close(), () => cancels.close(), () => registry.close(), async () => storeRedis.quit()];
      for (const s of steps) await s().catch((err: Error) => logger.warn({ err: err.message }, 'error while closing'));
    },
  };
}

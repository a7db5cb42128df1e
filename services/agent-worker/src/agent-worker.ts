import { FlowProducer, Queue, Worker } from 'bullmq';
import OpenAI from 'openai';
import {
  CancelListener,
  createMetrics,
  createRedis,
  quietConnectionErrors,
  observeWorkerJobs,
  providerBackoff,
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
import { processAgentTurn, type AgentTurnDeps } from './agent-turn-processor.js';
import type { AgentWorkerConfig } from './config.js';
import { observeModelCalls } from './model-telemetry.js';
import { traceAgentTurn } from './turn-span.js';

/** A running agent-worker: its BullMQ worker and what it holds open. */
export interface AgentWorkerHandle {
  worker: Worker;
  /** Where `/metrics` is served, when METRICS_PORT is set. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** Starts an agent-worker on the agent queue (one model step per job). */
export async function startAgentWorker(cfg: AgentWorkerConfig, logger: Logger, opts: { tracing?: Tracing } = {}): Promise<AgentWorkerHandle> {
  const metrics = createMetrics({ service: 'agent-worker' });
  const telemetry = opts.tracing?.bullmq;
  const storeRedis = createRedis(cfg.REDIS_URL, { name: 'agentq-agent-store', blocking: true });
  const queueRedis = createRedis(cfg.REDIS_URL, { name: 'agentq-agent-queue', blocking: true });
  const store = new RunStore({ redis: storeRedis, prefix: cfg.QUEUE_PREFIX, retentionSeconds: cfg.RUN_RETENTION_SECONDS, observer: runMetricsObserver(metrics) });
  const flow = quietConnectionErrors(new FlowProducer({ connection: queueRedis, prefix: cfg.QUEUE_PREFIX, telemetry }), logger, 'flow producer');
  const webhookQueue = quietConnectionErrors(new Queue(QUEUES.webhook, { connection: queueRedis, prefix: cfg.QUEUE_PREFIX, telemetry }), logger, 'webhook queue');
  // BullMQ retries model faults (with backoff, without holding a worker slot); the SDK must not also.
  const openai = observeModelCalls(new OpenAI({ baseURL: cfg.OPENAI_BASE_URL, apiKey: cfg.OPENAI_API_KEY ?? 'unset', maxRetries: 0 }), metrics);

  let catalog: { at: number; tools: ToolCatalogEntry[] } | null = null;
  const tools = async () => {
    if (!catalog || Date.now() - catalog.at > 2000) catalog = { at: Date.now(), tools: await store.getToolCatalog() };
    return catalog.tools;
  };

  const deps: AgentTurnDeps = { store, flow, openai, logger, webhookQueue, tools, modelTimeoutMs: cfg.MODEL_TIMEOUT_MS };
  const cancels = new CancelListener(createRedis(cfg.REDIS_URL, { name: 'agentq-agent-cancel', blocking: true }), cfg.QUEUE_PREFIX);
  await cancels.start();
  const worker = new Worker(
    QUEUES.agent,
    async (job, _token, signal) => {
      const tracked = cancels.track(job.data.runId, job.id!, signal);
      try {
        return await traceAgentTurn(job, () => processAgentTurn(job, deps, tracked.signal));
      } finally {
        tracked.release();
      }
    },
    {
    connection: createRedis(cfg.REDIS_URL, { name: 'agentq-agent-worker', blocking: true }),
    prefix: cfg.QUEUE_PREFIX,
    concurrency: cfg.AGENT_CONCURRENCY,
    ...workerLockOptions(cfg),
    // AGENT_RATE_LIMIT caps model steps for the whole queue (a provider's quota). Without it a
    // limiter far above any real throughput is still set: BullMQ honours worker.rateLimit() (a
    // provider's 429) only when one is configured.
    limiter: cfg.AGENT_RATE_LIMIT ?? { max: 1_000_000, duration: 1000 },
    settings: { backoffStrategy: (attemptsMade: number, _type?: string, err?: Error) => providerBackoff(attemptsMade, err) },
    telemetry,
    },
  );
  // A provider's 429 pauses the whole agent queue (every worker) for its Retry-After.
  deps.rateLimit = (ms) => worker.rateLimit(ms);
  worker.on('error', (err) => logger.error({ err: err.message }, 'agent worker error'));
  worker.on('failed', (job, err) => logger.warn({ run_id: job?.data.runId, job_id: job?.id, depth: job?.data.depth, err: err.message }, 'agent turn attempt failed'));
  observeWorkerJobs(worker, metrics);
  await worker.waitUntilReady();
  const metricsServer: MetricsServer | undefined =
    cfg.METRICS_PORT !== undefined ? await startMetricsServer({ registry: metrics.registry, port: cfg.METRICS_PORT, host: cfg.HOST, logger }) : undefined;
  logger.info({ queue: QUEUES.agent, concurrency: cfg.AGENT_CONCURRENCY }, 'agent-worker started');

  return {
    worker,
    metricsUrl: metricsServer?.url,
    async close() {
      const steps = [() => worker.close(), async () => metricsServer?.close(), () => cancels.close(), () => flow.close(), () => webhookQueue.close(), async () => storeRedis.quit(), async () => queueRedis.quit()];
      for (const s of steps) await s().catch((err: Error) => logger.warn({ err: err.message }, 'error while closing'));
    },
  };
}

import type { Worker } from 'bullmq';
import OpenAI from 'openai';
import {
  createMetrics,
  observeWorkerJobs,
  RedisConnections,
  runMetricsObserver,
  startMetricsServer,
  type Logger,
  type MetricsServer,
  type Tracing,
  untilRedisAnswers,
} from '@agentq/shared/infra';
import { ProviderBuckets, RunStore, type ToolCatalogEntry } from '@agentq/shared/store';
import { cellList, createJobWorker, JobQueues, workerLockOptions } from '@agentq/shared/jobs';
import { Admission, CancelListener, RunActions, Runs, TokenTally, UsageMeter } from '@agentq/shared/runs';
import { processAgentStep, type AgentStepDeps } from './agent-step-processor.js';
import { failedSteps } from './failed-steps.js';
import { DailyTokens } from './daily-tokens.js';
import { TranscriptCache } from './transcript-cache.js';
import { defaultTranscriptsInFlightBytes, TranscriptsInFlight } from './transcripts-in-flight.js';
import type { AgentWorkerConfig } from './config.js';
import { defaultModelAnswersInFlightBytes, ModelAnswersInFlight } from './model-answers-in-flight.js';
import { modelHttpFetch } from './model-http.js';
import { observeModelCalls } from './model-telemetry.js';
import { providerMetrics } from './provider-metrics.js';
import { Providers } from './providers.js';
import { traceAgentStep } from './step-span.js';

/** Stalls a step job is recovered from (BullMQ's maxStalledCount); the next fails it. */
export const STEP_MAX_STALLS = 1;

/** A running agent-worker: its BullMQ worker and what it holds open. */
export interface AgentWorkerHandle {
  /** One BullMQ worker per cell served. */
  workers: Worker[];
  /** Where `/metrics` is served, when METRICS_PORT is set. */
  metricsUrl?: string;
  close(): Promise<void>;
}

/** Starts an agent-worker on the agent queue (one model step per job). */
export async function startAgentWorker(
  cfg: AgentWorkerConfig,
  logger: Logger,
  opts: { tracing?: Tracing } = {},
): Promise<AgentWorkerHandle> {
  await untilRedisAnswers(cfg.REDIS_URL, logger);
  const inFlight = new TranscriptsInFlight(
    cfg.TRANSCRIPTS_IN_FLIGHT_MB !== undefined
      ? Math.floor(cfg.TRANSCRIPTS_IN_FLIGHT_MB * 1024 * 1024)
      : defaultTranscriptsInFlightBytes(),
  );
  const metrics = createMetrics({ service: 'agent-worker', transcriptsInFlight: () => inFlight.stats() });
  const telemetry = opts.tracing?.bullmq;
  const redis = new RedisConnections(cfg.REDIS_URL);
  const storeRedis = redis.connect('agentq-agent-store', { blocking: true });
  const store = new RunStore({
    redis: storeRedis,
    prefix: cfg.QUEUE_PREFIX,
    retentionSeconds: cfg.RUN_RETENTION_SECONDS,
  });
  const jobsRedis = redis.connect('agentq-agent-queue', { blocking: true });
  const jobs = new JobQueues({ connection: jobsRedis, prefix: cfg.QUEUE_PREFIX, cells: cfg.CELLS, logger, telemetry });
  const admission = new Admission(storeRedis, cfg.QUEUE_PREFIX);
  const runs = new Runs({ store, jobs, admission, logger, observer: runMetricsObserver(metrics) });
  const meter = new UsageMeter(storeRedis, cfg.QUEUE_PREFIX);
  const tokens = new TokenTally(meter);
  const dailyTokens = new DailyTokens({ admission, meter, tally: tokens });
  const modelFetch = modelHttpFetch({
    maxResponseBytes: Math.floor(cfg.MODEL_RESPONSE_MAX_MB * 1024 * 1024),
    maxFreeSockets: cfg.AGENT_CONCURRENCY,
    proxyEnv: cfg.modelProxyEnv,
  });
  // BullMQ retries model faults (with backoff, without holding a worker slot); the SDK must not also.
  const client = (baseURL: string | undefined, apiKey: string | undefined, headers?: Record<string, string>) =>
    observeModelCalls(
      new OpenAI({ baseURL, apiKey: apiKey ?? 'unset', maxRetries: 0, fetch: modelFetch, defaultHeaders: headers }),
      metrics,
    );
  const openai = client(cfg.OPENAI_BASE_URL, cfg.OPENAI_API_KEY);
  // PROVIDERS_CONFIG: a client, limits and prices per provider; else OPENAI_BASE_URL for every model.
  const providers = cfg.providers
    ? Providers.fromConfig(
        cfg.providers,
        (p) => client(p.baseUrl, p.apiKey, p.headers),
        new ProviderBuckets(storeRedis, cfg.QUEUE_PREFIX),
        providerMetrics(metrics.registry),
      )
    : Providers.single(openai);
  const answers = new ModelAnswersInFlight(
    cfg.MODEL_ANSWERS_IN_FLIGHT_MB !== undefined
      ? Math.floor(cfg.MODEL_ANSWERS_IN_FLIGHT_MB * 1024 * 1024)
      : defaultModelAnswersInFlightBytes(),
  );

  let catalog: { at: number; tools: ToolCatalogEntry[] } | null = null;
  const tools = async () => {
    if (!catalog || Date.now() - catalog.at > 2000) catalog = { at: Date.now(), tools: await store.catalog.get() };
    return catalog.tools;
  };

  const actions = new RunActions({ store, jobs, runs, logger });
  const deps: AgentStepDeps = {
    store,
    runs,
    jobs,
    actions,
    actionParkMs: cfg.ACTION_PARK_MAX_MS,
    openai,
    providers,
    backoffBaseMs: cfg.MODEL_BACKOFF_BASE_MS,
    logger,
    tools,
    tokens,
    dailyTokens,
    modelTimeoutMs: cfg.MODEL_TIMEOUT_MS,
    modelIdleTimeoutMs: cfg.MODEL_IDLE_TIMEOUT_MS,
    modelResponseMaxBytes: Math.floor(cfg.MODEL_RESPONSE_MAX_MB * 1024 * 1024),
    rateLimitMaxWaitMs: cfg.MODEL_RATE_LIMIT_MAX_WAIT_MS,
    ...(cfg.TRANSCRIPT_CACHE_MB > 0 ? { transcripts: new TranscriptCache(cfg.TRANSCRIPT_CACHE_MB * 1024 * 1024) } : {}),
    inFlight,
  };
  const cancels = new CancelListener(redis.connect('agentq-agent-cancel', { blocking: true }), cfg.QUEUE_PREFIX);
  await cancels.start();
  const workerRedis = redis.connect('agentq-agent-worker', { blocking: true });
  const workers = cellList(cfg.CELLS, cfg.WORKER_CELLS).map((cell) =>
    createJobWorker(
      'agentStep',
      // Each step holds its model answers (ModelAnswersInFlight) until it ends, stored or not.
      (data, ctx) => {
        const answer = answers.hold();
        return traceAgentStep(data, ctx.job, () => processAgentStep(data, ctx, { ...deps, answer })).finally(() =>
          answer.release(),
        );
      },
      {
        connection: workerRedis,
        prefix: cfg.QUEUE_PREFIX,
        cell,
        cells: cfg.CELLS,
        concurrency: cfg.AGENT_CONCURRENCY,
        logger,
        cancels,
        telemetry,
        backoffBaseMs: cfg.MODEL_BACKOFF_BASE_MS,
        // A step is redone once after its worker dies under it, not again: one that kills its worker
        // twice (an answer that exhausts the heap) fails its run (failed-steps.ts).
        lock: workerLockOptions(cfg, STEP_MAX_STALLS),
        // AGENT_RATE_LIMIT caps model steps for the whole queue (a provider's quota).
        ...(cfg.AGENT_RATE_LIMIT ? { limiter: cfg.AGENT_RATE_LIMIT } : {}),
      },
    ),
  );
  // A step job that BullMQ fails for good without the step ending its run ends it (failed-steps.ts).
  const stuck = failedSteps({
    jobs,
    redis: jobsRedis,
    runs,
    logger,
    cells: cellList(cfg.CELLS, cfg.WORKER_CELLS),
    lookbackMs: 24 * 3600_000,
  });
  for (const w of workers) {
    observeWorkerJobs(w, metrics);
    stuck.watch(w);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  stuck.start(cfg.STALLED_INTERVAL_MS);
  const metricsServer: MetricsServer | undefined =
    cfg.METRICS_PORT !== undefined
      ? await startMetricsServer({ registry: metrics.registry, port: cfg.METRICS_PORT, host: cfg.HOST, logger })
      : undefined;
  logger.info(
    {
      queues: workers.map((w) => w.name),
      concurrency: cfg.AGENT_CONCURRENCY,
      transcripts_in_flight_mb: Math.round(inFlight.capacity / 1024 / 1024),
      model_answers_in_flight_mb: Math.round(answers.capacity / 1024 / 1024),
    },
    'agent-worker started',
  );

  return {
    workers,
    metricsUrl: metricsServer?.url,
    async close() {
      const steps = [
        () => Promise.all(workers.map((w) => w.close())),
        () => stuck.close(),
        async () => metricsServer?.close(),
        () => cancels.close(),
        () => tokens.close(),
        () => jobs.close(),
        () => redis.closeAll(),
        async () => modelFetch.close(),
      ];
      for (const s of steps) await s().catch((err: Error) => logger.warn({ err: err.message }, 'error while closing'));
    },
  };
}

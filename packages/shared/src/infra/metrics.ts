import type { Queue } from 'bullmq';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RunObserver } from '../runs/runs.js';
import type { RunSpec } from '../core/schemas/run.js';

/** The process that serves a registry; it is the `service` label of every metric. */
export type MetricsService = 'api' | 'agent-worker' | 'tool-worker';

/** Every metric of agentq, on one registry per service process. */
export interface AgentqMetrics {
  registry: Registry;
  runsCreated: Counter<'kind'>;
  runsStarted: Counter;
  runsFinished: Counter<'status' | 'stop_reason' | 'kind'>;
  runDuration: Histogram<'status' | 'kind'>;
  modelCallDuration: Histogram<'model' | 'outcome'>;
  modelTokens: Counter<'model' | 'type'>;
  toolCalls: Counter<'tool' | 'outcome' | 'kind'>;
  toolCallDuration: Histogram<'tool'>;
  /** Present when the service was given queues to report on. */
  queueJobs?: Gauge<'queue' | 'state'>;
  jobAttempts: Counter<'queue' | 'outcome'>;
  jobDuration: Histogram<'queue'>;
  jobsStalled: Counter<'queue'>;
  webhookDeliveries: Counter<'outcome'>;
}

/** The queue states reported by `agentq_queue_jobs`. */
export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'waiting-children', 'prioritized', 'failed'] as const;

/**
 * Builds the registry of one service process: agentq's metrics and Node's process metrics
 * (`collectDefaultMetrics`), every name prefixed `agentq_`, every series labelled `service`.
 * A registry per process (never prom-client's global one) keeps services started in one
 * process (the tests) apart.
 */
export function createMetrics(opts: {
  service: MetricsService;
  /** Queues whose depth `agentq_queue_jobs` reports, read at each scrape. */
  queues?: Queue[];
  /** Called when reading queue depths fails (the gauge is then left empty for that scrape). */
  onQueueError?: (err: Error) => void;
  /** Node's process metrics (CPU, memory, event-loop lag, GC). @defaultValue true */
  processMetrics?: boolean;
  /** An agent-worker's transcripts in flight, read at each scrape. */
  transcriptsInFlight?: () => { held: number; waiting: number };
  /** A tool-worker's MCP answers being read, read at each scrape. */
  mcpAnswersInFlight?: () => { held: number; readers: number };
  /** An API process's large answers not yet sent and its event streams, read at each scrape. */
  responsesInFlight?: () => { held: number; waiting: number; streams: number };
  /** An API process's request bodies let in and not yet answered, read at each scrape. */
  bodiesInFlight?: () => number;
}): AgentqMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: opts.service });
  if (opts.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'agentq_' });
  const registers = [registry];
  const inFlight = opts.transcriptsInFlight;
  if (inFlight) {
    new Gauge({
      name: 'agentq_transcript_bytes_in_flight',
      help: 'Bytes of stored transcripts the steps in flight hold (bounded by TRANSCRIPTS_IN_FLIGHT_MB)',
      registers,
      collect() {
        this.set(inFlight().held);
      },
    });
    new Gauge({
      name: 'agentq_steps_waiting_for_transcript_room',
      help: 'Steps waiting for room to read their transcript (TRANSCRIPTS_IN_FLIGHT_MB is held by others)',
      registers,
      collect() {
        this.set(inFlight().waiting);
      },
    });
  }
  const answers = opts.mcpAnswersInFlight;
  if (answers) {
    new Gauge({
      name: 'agentq_mcp_answer_bytes_in_flight',
      help: 'Bytes of MCP answers being read from HTTP servers (past MCP_ANSWERS_IN_FLIGHT_MB, reading waits)',
      registers,
      collect() {
        this.set(answers().held);
      },
    });
  }
  const responses = opts.responsesInFlight;
  if (responses) {
    new Gauge({
      name: 'agentq_response_bytes_in_flight',
      help:
        'Bytes of large answers and events (64 KB and over) ' +
        'the API holds until their clients take them (bounded by MAX_RESPONSES_IN_FLIGHT_BYTES)',
      registers,
      collect() {
        this.set(responses().held);
      },
    });
    new Gauge({
      name: 'agentq_event_streams_waiting_for_room',
      help:
        'Event streams and run lists waiting for room in MAX_RESPONSES_IN_FLIGHT_BYTES ' +
        "(or in their key's half of it) to write a large event or batch of runs",
      registers,
      collect() {
        this.set(responses().waiting);
      },
    });
    new Gauge({
      name: 'agentq_event_streams_open',
      help: 'Event streams open on the API process (bounded by MAX_EVENT_STREAMS)',
      registers,
      collect() {
        this.set(responses().streams);
      },
    });
  }
  const bodies = opts.bodiesInFlight;
  if (bodies) {
    new Gauge({
      name: 'agentq_request_body_bytes_in_flight',
      help: 'Bytes of request bodies the API has let in and not yet answered (bounded by MAX_BODIES_IN_FLIGHT_BYTES)',
      registers,
      collect() {
        this.set(bodies());
      },
    });
  }
  return {
    registry,
    runsCreated: new Counter({
      name: 'agentq_runs_created_total',
      help: 'Runs accepted: root runs by POST /v1/runs, sub-runs by agent_query',
      labelNames: ['kind'],
      registers,
    }),
    runsStarted: new Counter({
      name: 'agentq_runs_started_total',
      help: 'Runs whose first model step began (queued → running)',
      registers,
    }),
    runsFinished: new Counter({
      name: 'agentq_runs_finished_total',
      help: 'Runs that reached a terminal status, counted once by the process that ended them',
      labelNames: ['status', 'stop_reason', 'kind'],
      registers,
    }),
    runDuration: new Histogram({
      name: 'agentq_run_duration_seconds',
      help: 'Time from a run’s creation to its terminal status',
      labelNames: ['status', 'kind'],
      buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200],
      registers,
    }),
    modelCallDuration: new Histogram({
      name: 'agentq_model_call_duration_seconds',
      help: 'One chat-completions call, request to last streamed chunk',
      labelNames: ['model', 'outcome'],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320, 600],
      registers,
    }),
    modelTokens: new Counter({
      name: 'agentq_model_tokens_total',
      help: 'Tokens reported by the model provider',
      labelNames: ['model', 'type'],
      registers,
    }),
    toolCalls: new Counter({
      name: 'agentq_tool_calls_total',
      help:
        'Tool calls by result: outcome ok, error (an error result the model sees) or timeout; ' +
        'kind the precise outcome (ok, tool_error, refused, unknown_outcome, …)',
      labelNames: ['tool', 'outcome', 'kind'],
      registers,
    }),
    toolCallDuration: new Histogram({
      name: 'agentq_tool_call_duration_seconds',
      help: 'One tool call, first attempt to stored result',
      labelNames: ['tool'],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    }),
    ...(opts.queues ? { queueJobs: queueDepthGauge(opts.queues, registers, opts.onQueueError) } : {}),
    jobAttempts: new Counter({
      name: 'agentq_job_attempts_total',
      help: 'Job attempts this process ran: completed, failed with a retry to come (retrying), or failed for good',
      labelNames: ['queue', 'outcome'],
      registers,
    }),
    jobDuration: new Histogram({
      name: 'agentq_job_duration_seconds',
      help: 'One completed job attempt, from pick-up to completion',
      labelNames: ['queue'],
      buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    }),
    jobsStalled: new Counter({
      name: 'agentq_jobs_stalled_total',
      help: 'Jobs whose worker stopped renewing the lock (crashed or blocked); BullMQ hands them to another worker',
      labelNames: ['queue'],
      registers,
    }),
    webhookDeliveries: new Counter({
      name: 'agentq_webhook_deliveries_total',
      help:
        'Webhook delivery attempts: delivered (2xx), retrying (failed, ' +
        'another attempt scheduled) or failed (no more attempts)',
      labelNames: ['outcome'],
      registers,
    }),
  };
}

// One getJobCounts per queue per scrape (a few O(1) Redis reads each); values are set only
// after every read succeeded, so a scrape during a Redis outage shows no stale depths.
function queueDepthGauge(
  queues: Queue[],
  registers: Registry[],
  onError?: (err: Error) => void,
): Gauge<'queue' | 'state'> {
  return new Gauge({
    name: 'agentq_queue_jobs',
    help:
      'Jobs in a queue by state, read from Redis on each scrape ' +
      '(the same value from every process: aggregate with max)',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      let counts: Array<Record<string, number>>;
      try {
        counts = await Promise.all(queues.map((q) => withTimeout(q.getJobCounts(...QUEUE_STATES), 2000)));
      } catch (err) {
        this.reset();
        onError?.(err as Error);
        return;
      }
      this.reset();
      queues.forEach((q, i) => {
        for (const state of QUEUE_STATES) this.set({ queue: q.name, state }, counts[i][state] ?? 0);
      });
    },
  });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from Redis within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Bounds the values of a label that comes from requests (a model name): the first `max`
 * distinct values are kept, later ones become `other`, so a client cannot grow the series
 * without end.
 */
export function boundedLabel(max = 50, maxLength = 100): (value: string) => string {
  const seen = new Set<string>();
  return (value) => {
    const v = value.slice(0, maxLength);
    if (seen.has(v)) return v;
    if (seen.size >= max) return 'other';
    seen.add(v);
    return v;
  };
}

/** A label for a run: a root run or a sub-run started by agent_query. */
export const runKind = (spec: Pick<RunSpec, 'ancestors'>) => (spec.ancestors?.length ? 'subrun' : 'root');

/** A run-store observer that counts runs into `metrics` (each transition once, cluster-wide). */
export function runMetricsObserver(metrics: AgentqMetrics): RunObserver {
  return {
    runCreated: (spec) => metrics.runsCreated.inc({ kind: runKind(spec) }),
    runStarted: () => metrics.runsStarted.inc(),
    runFinished: (run, spec) => {
      const kind = runKind(spec);
      metrics.runsFinished.inc({ status: run.status, stop_reason: run.stop_reason ?? 'none', kind });
      const seconds = (Date.parse(run.completed_at ?? '') - Date.parse(run.created_at)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) metrics.runDuration.observe({ status: run.status, kind }, seconds);
    },
  };
}

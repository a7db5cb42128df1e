import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import { providerBackoff, webhookBackoff } from './backoff.js';

/** The queues of agentq, under `QUEUE_PREFIX`. */
export const QUEUES = { agent: 'agent', tool: 'tool', webhook: 'webhook' } as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** The W3C trace context a job's span joins (set when tracing is on; see run-tracing.ts). */
const traceparent = z.string().max(256);

/** One model step of a run: `depth` rounds of tool calls are done before it. */
export const agentStepJobSchema = z.object({
  kind: z.literal('agentStep'),
  runId: z.string(),
  depth: z.number().int().min(0),
  traceparent: traceparent.optional(),
  /**
   * The transcript's stored size (bytes) when the step was added: at the run's creation for its
   * first step, before the step that added it otherwise (whose message and round the step's room
   * for more covers). The step takes room for it and reads its input in one round trip, not its
   * size first.
   */
  transcriptBytes: z.number().int().min(0).optional(),
  /** When this step first got a 429 (ms since the epoch): it waits for the provider's quota at most MODEL_RATE_LIMIT_MAX_WAIT_MS from then. */
  rateLimitedSince: z.number().int().min(0).optional(),
  /** With `fallback_models`: which model the step calls (0: the run's, n: its n-th fallback). */
  modelIndex: z.number().int().min(0).optional(),
  /** With `fallback_models`: the tries that failed on that model. */
  modelAttempts: z.number().int().min(0).optional(),
  /** A step that repairs an answer that failed the run's response_format: which repair (1, 2, …). */
  repair: z.number().int().min(1).optional(),
});

/** A call of a round, the `index`-th of the assistant's `tool_calls`. */
const roundCallSchema = z.object({
  index: z.number().int().min(0),
  toolCallId: z.string(),
  name: z.string(),
  arguments: z.string(),
  /** The run's tool_limits refuse the call: its result is this error, and it is not made. */
  refused: z.string().optional(),
});

/**
 * Tool calls of one round (see fan-out.ts): all the calls that only run share one job; a call
 * that waits (for an answer, or on the sub-runs it starts) has a job of its own. Each call is
 * begun, run and stored on its own; the job whose result completes the round enqueues the next
 * step, which is the only way a run's next step is released.
 */
export const toolCallsJobSchema = z.object({
  kind: z.literal('toolCalls'),
  runId: z.string(),
  depth: z.number().int().min(0),
  /** How many calls the step made: the round is complete when that many results are stored. */
  count: z.number().int().min(1),
  calls: z.array(roundCallSchema).min(1),
  traceparent: traceparent.optional(),
  /** The run's ancestors (a sub-run's), root first: the calls do not start once one has ended. */
  ancestors: z.array(z.string()).max(16).optional(),
  /**
   * The request for an answer the job's one call waits for (see actions/): the job is added
   * delayed until the request expires and promoted when it is answered; it acts on the decision stored.
   */
  actionId: z.string().max(64).optional(),
  /** Set by a sub-agent call once it has started its sub-runs (it then waits for them). */
  subrunIds: z.array(z.string()).optional(),
  /** Set with subrunIds: when the call started (ms since the epoch), for its duration. */
  startedAt: z.number().int().min(0).optional(),
  /** The next step the job enqueues if its result completes the round. */
  nextStep: z.object({
    traceparent: traceparent.optional(),
    /** The transcript's size as the step that fanned out read it (see AgentStepJob). */
    transcriptBytes: z.number().int().min(0).optional(),
    /** The round starts sub-runs: the run, which gives its slot up while it waits on them, takes it back. */
    resumes: z.boolean().optional(),
  }),
});

/** One webhook to deliver for a run's event. */
export const webhookJobSchema = z.object({
  kind: z.literal('webhook'),
  runId: z.string(),
  webhookId: z.string(),
  type: z.string(),
});

// Kept jobs, by age and count: removeOnComplete:true races with waitUntilFinished (see NOTES).
const keep = { removeOnComplete: { age: 3600, count: 10_000 }, removeOnFail: { age: 7 * 24 * 3600 } } as const;

// A tool job that fails for good (stalled too often, or Redis refused its last attempt's writes)
// has error results stored for its calls that have none, which completes its round as any result
// does (see services/tool-worker/src/failed-calls.ts).
const toolJobOptions: JobsOptions = { attempts: 4, backoff: { type: 'exponential', delay: 500, jitter: 0.5 }, ...keep };

/** What defines a kind of job: where it goes, what it carries, how it is named and retried. */
interface JobKindDef<S extends z.ZodType> {
  queue: QueueName;
  schema: S;
  /**
   * The job id, derived from the data so that a step done again adds nothing twice. Ids may not
   * contain `:` (BullMQ refuses them).
   */
  id(data: Omit<z.infer<S>, 'kind'>): string;
  /** What Bull Board shows: which run, step and tool a job is. */
  name(data: Omit<z.infer<S>, 'kind'>): string;
  /** Retry policy. Flow jobs do not get a queue's defaultJobOptions (bullmq #1148): every add passes these. */
  options: JobsOptions;
  /** The custom backoff (`options.backoff.type` not built into BullMQ), from a configurable base. */
  backoff?: (attemptsMade: number, err: Error | undefined, baseMs: number) => number;
  /** Log fields of a job of this kind. */
  logFields(data: Omit<z.infer<S>, 'kind'>): Record<string, unknown>;
}

const kind = <S extends z.ZodType>(def: JobKindDef<S>) => def;

/** The typed job catalog: every kind of job agentq runs. */
export const JOB_KINDS = {
  agentStep: kind({
    queue: QUEUES.agent,
    schema: agentStepJobSchema,
    id: (d) => `${d.runId}-t${d.depth}`,
    name: (d) => `${d.runId} · step ${d.depth}`,
    // 'provider': exponential with jitter, or the provider's Retry-After when it sent one.
    options: { attempts: 8, backoff: { type: 'provider', delay: 1000 }, ...keep },
    backoff: (attemptsMade, err, baseMs) => providerBackoff(attemptsMade, err, baseMs),
    logFields: (d) => ({ run_id: d.runId, depth: d.depth }),
  }),
  toolCalls: kind({
    queue: QUEUES.tool,
    schema: toolCallsJobSchema,
    id: (d) => toolCallJobId({ runId: d.runId, depth: d.depth, index: d.calls[0]!.index }),
    name: (d) => `${d.runId} · step ${d.depth} · ${d.calls.map((c) => c.name).join(', ')}`.slice(0, 300),
    options: toolJobOptions,
    logFields: (d) => ({ run_id: d.runId, depth: d.depth, tools: d.calls.map((c) => c.name).slice(0, 8) }),
  }),
  webhook: kind({
    queue: QUEUES.webhook,
    schema: webhookJobSchema,
    id: (d) => `${d.webhookId}-${d.type.replace(/\W/g, '_')}`,
    name: (d) => `${d.runId} · ${d.type}`,
    options: { attempts: 10, backoff: { type: 'webhook' }, ...keep },
    backoff: (attemptsMade, _err, baseMs) => webhookBackoff(attemptsMade, baseMs),
    logFields: (d) => ({ run_id: d.runId, webhook_id: d.webhookId, type: d.type }),
  }),
};

export type JobKind = keyof typeof JOB_KINDS;
export type JobData<K extends JobKind> = z.infer<(typeof JOB_KINDS)[K]['schema']>;
export type AgentStepJob = JobData<'agentStep'>;
export type ToolCallsJob = JobData<'toolCalls'>;
export type WebhookJob = JobData<'webhook'>;

/** A job's data as its producer gives it: its kind is the catalog's to set. */
export type JobInput<K extends JobKind> = Omit<JobData<K>, 'kind'>;

/** The job id of a job of kind `k`. */
export function jobId<K extends JobKind>(k: K, data: JobInput<K>): string {
  return (JOB_KINDS[k].id as unknown as (d: JobInput<K>) => string)(data);
}

/**
 * A tool call of a step: the job of a call that waits (for an answer, or on sub-runs) has it
 * alone, and its id derives from it (see toolCallJobId).
 */
export interface ToolCallRef {
  runId: string;
  depth: number;
  index: number;
}

/** The id of the job whose first (for a call that waits, only) call is `ref`. */
export const toolCallJobId = (ref: ToolCallRef) => `${ref.runId}-t${ref.depth}-c${ref.index}`;

/**
 * Worker lock settings. A job's lock is renewed every lockDuration/2 while it runs, so a
 * 2-minute model call keeps its lock; a killed worker's lock lapses after lockDuration and the
 * next stall check (every stalledInterval) hands the job to another worker: seconds, not
 * BullMQ's default minute. A job is handed on after `maxStalledCount` stalls; after one more,
 * BullMQ fails it when a worker next picks it up, without running it ("job stalled more than
 * allowable limit"): a job that kills every worker that runs it stops there. Every worker of a
 * queue must say the same (whichever runs the stall check applies its own).
 */
export function workerLockOptions(cfg: { JOB_LOCK_MS: number; STALLED_INTERVAL_MS: number }, maxStalledCount = 3) {
  return { lockDuration: cfg.JOB_LOCK_MS, stalledInterval: cfg.STALLED_INTERVAL_MS, maxStalledCount };
}

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
});

/** One tool call of a step, the `index`-th of the assistant's `tool_calls`. */
export const toolCallJobSchema = z.object({
  runId: z.string(),
  depth: z.number().int().min(0),
  index: z.number().int().min(0),
  toolCallId: z.string(),
  name: z.string(),
  arguments: z.string(),
  /** How many calls the step made; lets the round's last result append the tool messages. */
  count: z.number().int().min(1).optional(),
  traceparent: traceparent.optional(),
  /** Set by a sub-agent call once it has started its sub-runs (it then waits for them). */
  subrunIds: z.array(z.string()).optional(),
  /** The run's ancestors (a sub-run's), root first: the call does not start once one has ended. */
  ancestors: z.array(z.string()).max(16).optional(),
  /**
   * The request for an answer the call waits for (see actions/): the job is added delayed until
   * the request expires and promoted when it is answered; it acts on the decision stored.
   */
  actionId: z.string().max(64).optional(),
  /**
   * Set when this job is its round's only one and no flow parent waits for it (see fan-out.ts):
   * the job adds the run's next step itself once its calls are stored (or once it fails for
   * good), joining the trace given here.
   */
  nextStep: z
    .object({ traceparent: traceparent.optional(), transcriptBytes: z.number().int().min(0).optional() })
    .optional(),
});

/** A call of a round that a tool-round job runs: what a tool-call job carries of it. */
const roundCallSchema = z.object({
  index: z.number().int().min(0),
  toolCallId: z.string(),
  name: z.string(),
  arguments: z.string(),
});

/**
 * Several calls of one round in one job (see fan-out.ts): the calls that run at once and need
 * nothing of the job but its slot, i.e. no answer to wait for and no sub-runs to wait on. Each
 * call is begun, run and stored as a tool-call job's would be; the job retries the calls whose
 * result is not stored yet.
 */
export const toolRoundJobSchema = toolCallJobSchema
  .pick({ runId: true, depth: true, count: true, traceparent: true, ancestors: true, nextStep: true })
  .extend({ calls: z.array(roundCallSchema).min(2) });

/** One webhook to deliver for a run's event. */
export const webhookJobSchema = z.object({ runId: z.string(), webhookId: z.string(), type: z.string() });

// Kept jobs, by age and count: removeOnComplete:true races with waitUntilFinished (see NOTES).
const keep = { removeOnComplete: { age: 3600, count: 10_000 }, removeOnFail: { age: 7 * 24 * 3600 } } as const;

// A tool job that still fails (stalled too often) must release the next step instead of leaving
// it in waiting-children forever (bullmq #3362): ignoreDependencyOnFailure. The same for a job of
// one call and a job of a round's calls. (A job that adds the next step itself has no parent:
// when it fails for good, the tool-worker adds the step; see next-steps.ts.)
const toolJobOptions: JobsOptions = {
  attempts: 4,
  backoff: { type: 'exponential', delay: 500, jitter: 0.5 },
  ignoreDependencyOnFailure: true,
  ...keep,
};

/** What defines a kind of job: where it goes, what it carries, how it is named and retried. */
interface JobKindDef<S extends z.ZodType> {
  queue: QueueName;
  schema: S;
  /**
   * The job id, derived from the data so that a redelivered job re-adds nothing. Ids may not
   * contain `:` (BullMQ refuses them) and keep the form of earlier versions (`-t<depth>`), so
   * that a rolling upgrade cannot enqueue the same step twice under two ids.
   */
  id(data: z.infer<S>): string;
  /** What Bull Board shows: which run, step and tool a job is. */
  name(data: z.infer<S>): string;
  /** Retry policy. Flow jobs do not get a queue's defaultJobOptions (bullmq #1148): every add passes these. */
  options: JobsOptions;
  /** The custom backoff (`options.backoff.type` not built into BullMQ), from a configurable base. */
  backoff?: (attemptsMade: number, err: Error | undefined, baseMs: number) => number;
  /** Log fields of a job of this kind. */
  logFields(data: z.infer<S>): Record<string, unknown>;
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
  toolCall: kind({
    queue: QUEUES.tool,
    schema: toolCallJobSchema,
    id: (d) => `${d.runId}-t${d.depth}-c${d.index}`,
    name: (d) => `${d.runId} · step ${d.depth} · ${d.name}`,
    options: toolJobOptions,
    logFields: (d) => ({ run_id: d.runId, depth: d.depth, tool: d.name }),
  }),
  toolRound: kind({
    queue: QUEUES.tool,
    schema: toolRoundJobSchema,
    id: (d) => `${d.runId}-t${d.depth}-r`,
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
export type ToolCallJob = JobData<'toolCall'>;
export type ToolRoundJob = JobData<'toolRound'>;
export type WebhookJob = JobData<'webhook'>;

/** The job id of a job of kind `k`. */
export function jobId<K extends JobKind>(k: K, data: JobData<K>): string {
  return (JOB_KINDS[k].id as (d: JobData<K>) => string)(data);
}

/** The tool call of a step that a tool-call job runs: what its id derives from. */
export interface ToolCallRef {
  runId: string;
  depth: number;
  index: number;
}

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

import { UnrecoverableError, Worker, type Job, type Telemetry, type WorkerOptions } from 'bullmq';
import type { RedisClient } from '../redis.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AgentqError } from '../errors.js';
import type { CancelListener } from '../runs/cancel-listener.js';
import { JOB_KINDS, type JobData, type JobKind } from './catalog.js';
import { cellPrefix, cellQueueName } from './cells.js';
import { workerErrorLog } from './worker-errors.js';

/** What a handler gets beside its parsed data: the BullMQ job (for its id, attempts and waits). */
export interface JobContext {
  job: Job;
  /** The lock token, for moveToWaitingChildren and similar. */
  token?: string;
  /** Aborts when the job's run is cancelled or the worker closes. */
  signal?: AbortSignal;
}

export type JobHandler<K extends JobKind> = (data: JobData<K>, ctx: JobContext) => Promise<unknown>;

export interface JobWorkerOptions {
  /** The worker's own connection; its caller closes it (BullMQ does not close a connection it is handed). */
  connection: RedisClient;
  prefix: string;
  /** The cell whose queue it serves, of how many. @defaultValue cell 0 of 1 */
  cell?: number;
  cells?: number;
  concurrency: number;
  logger: Logger;
  /** Base of the kind's custom backoff, if it has one. @defaultValue 1000 */
  backoffBaseMs?: number;
  /** Aborts a job's work when its run is cancelled. */
  cancels?: CancelListener;
  telemetry?: Telemetry;
  lock?: Pick<WorkerOptions, 'lockDuration' | 'stalledInterval' | 'maxStalledCount'>;
  limiter?: WorkerOptions['limiter'];
}

/**
 * A fault no retry can fix becomes BullMQ's UnrecoverableError here, and only here: the
 * job fails at once instead of using up its attempts.
 */
export function toBullmqError(err: unknown): unknown {
  if (err instanceof AgentqError && !err.retryable) return new UnrecoverableError(err.message);
  return err;
}

/** Handlers of kinds that share one queue (tool calls and tool rounds): a job runs the one whose schema its data fits. */
export type JobHandlers = { [K in JobKind]?: JobHandler<K> };

/** A job's data parsed against the schema of the first kind of `kinds` it fits. */
type Parsed = { kind: JobKind; data: { runId: string } } | { kind: undefined; error: string };

/**
 * A BullMQ worker for one kind of the job catalog. The handler gets the job's data parsed
 * against its schema (data that does not parse fails the job for good), a signal that aborts on
 * the run's cancel, and the kind's backoff is registered.
 */
export function createJobWorker<K extends JobKind>(kind: K, handler: JobHandler<K>, o: JobWorkerOptions): Worker {
  return createQueueWorker({ [kind]: handler } as JobHandlers, o);
}

/** A BullMQ worker for the kinds of one queue, each job handled by its kind's handler (see createJobWorker). */
export function createQueueWorker(handlers: JobHandlers, o: JobWorkerOptions): Worker {
  const kinds = Object.keys(handlers) as JobKind[];
  const queues = new Set(kinds.map((k) => JOB_KINDS[k].queue));
  if (queues.size !== 1) throw new Error(`one worker serves one queue: ${kinds.join(', ')}`);
  const label = kinds.join('/');
  // The kinds' data never fit each other's schemas, so the order they are tried in changes only
  // the cost: the kind that fitted the last job is tried first (a failed parse builds its issues).
  let likely = 0;
  const parse = (job: Job): Parsed => {
    let firstKindError: z.ZodError | undefined;
    for (let i = 0; i < kinds.length; i++) {
      const at = (likely + i) % kinds.length;
      const kind = kinds[at]!;
      const parsed = (JOB_KINDS[kind].schema as z.ZodType).safeParse(job.data);
      if (parsed.success) {
        likely = at;
        return { kind, data: parsed.data as { runId: string } };
      }
      if (at === 0) firstKindError = parsed.error;
    }
    // Worded only for data that fits no kind, after the first kind's schema.
    return { kind: undefined, error: firstKindError ? z.prettifyError(firstKindError) : 'no kind' };
  };
  const backoff = kinds
    .map(
      (k) =>
        (JOB_KINDS[k] as { backoff?: (attemptsMade: number, err: Error | undefined, baseMs: number) => number })
          .backoff,
    )
    .find(Boolean);
  const baseMs = o.backoffBaseMs ?? 1000;
  const cell = o.cell ?? 0;
  const worker = new Worker(
    cellQueueName([...queues][0]!, cell, o.cells ?? 1),
    async (job, token, signal) => {
      const parsed = parse(job);
      if (!parsed.kind) throw new UnrecoverableError(`invalid ${label} job data: ${parsed.error}`);
      const handler = handlers[parsed.kind] as (data: unknown, ctx: JobContext) => Promise<unknown>;
      const tracked = o.cancels?.track(parsed.data.runId, job.id!, signal);
      try {
        return await handler(parsed.data, { job, token, signal: tracked?.signal ?? signal });
      } catch (err) {
        throw toBullmqError(err);
      } finally {
        tracked?.release();
      }
    },
    {
      connection: o.connection,
      prefix: cellPrefix(o.prefix, cell),
      concurrency: o.concurrency,
      telemetry: o.telemetry,
      ...o.lock,
      ...(o.limiter ? { limiter: o.limiter } : {}),
      ...(backoff
        ? {
            settings: {
              backoffStrategy: (attemptsMade: number, _type?: string, err?: Error) =>
                backoff(attemptsMade, err, baseMs),
            },
          }
        : {}),
    },
  );
  worker.on('error', workerErrorLog(o.logger, label));
  worker.on('failed', (job, err) => {
    const parsed = job ? parse(job) : undefined;
    const fields = parsed?.kind
      ? (JOB_KINDS[parsed.kind].logFields as (d: unknown) => Record<string, unknown>)(parsed.data)
      : {};
    o.logger.warn(
      { job_id: job?.id, ...fields, attempt: job?.attemptsMade, err: err.message },
      `${parsed?.kind ?? label} job attempt failed`,
    );
  });
  return worker;
}

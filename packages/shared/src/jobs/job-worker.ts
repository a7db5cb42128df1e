import { UnrecoverableError, Worker, type Job, type Telemetry, type WorkerOptions } from 'bullmq';
import type { RedisClient } from '../infra/redis.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AgentqError } from '../core/errors.js';
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

/**
 * A BullMQ worker for one kind of the job catalog (each queue holds one kind; a job says its kind
 * in its data). The handler gets the job's data parsed against the kind's schema (data that does
 * not parse fails the job for good), a signal that aborts on the run's cancel, and the kind's
 * backoff is registered.
 */
export function createJobWorker<K extends JobKind>(kind: K, handler: JobHandler<K>, o: JobWorkerOptions): Worker {
  const def = JOB_KINDS[kind];
  const parse = (job: Job) => (def.schema as unknown as z.ZodType<JobData<K>>).safeParse(job.data);
  const backoff = (def as { backoff?: (attemptsMade: number, err: Error | undefined, baseMs: number) => number })
    .backoff;
  const baseMs = o.backoffBaseMs ?? 1000;
  const cell = o.cell ?? 0;
  const worker = new Worker(
    cellQueueName(def.queue, cell, o.cells ?? 1),
    async (job, token, signal) => {
      const parsed = parse(job);
      if (!parsed.success) throw new UnrecoverableError(`invalid ${kind} job data: ${z.prettifyError(parsed.error)}`);
      const data = parsed.data as JobData<K> & { runId: string };
      const tracked = o.cancels?.track(data.runId, job.id!, signal);
      try {
        return await handler(data, { job, token, signal: tracked?.signal ?? signal });
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
  worker.on('error', workerErrorLog(o.logger, kind));
  worker.on('failed', (job, err) => {
    const parsed = job ? parse(job) : undefined;
    const fields = parsed?.success ? (def.logFields as (d: unknown) => Record<string, unknown>)(parsed.data) : {};
    o.logger.warn(
      { job_id: job?.id, ...fields, attempt: job?.attemptsMade, err: err.message },
      `${kind} job attempt failed`,
    );
  });
  return worker;
}

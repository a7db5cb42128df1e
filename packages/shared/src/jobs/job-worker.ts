import { UnrecoverableError, Worker, type Job, type Telemetry, type WorkerOptions } from 'bullmq';
import type { RedisClient } from '../redis.js';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AgentqError } from '../errors.js';
import type { CancelListener } from '../runs/cancel-listener.js';
import { JOB_KINDS, type JobData, type JobKind } from './catalog.js';

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
 * A BullMQ worker for one kind of the job catalog. The handler gets the job's data parsed
 * against its schema (data that does not parse fails the job for good), a signal that aborts on
 * the run's cancel, and the kind's backoff is registered.
 */
export function createJobWorker<K extends JobKind>(kind: K, handler: JobHandler<K>, o: JobWorkerOptions): Worker {
  const def = JOB_KINDS[kind];
  const parse = (job: Job) => def.schema.safeParse(job.data) as z.ZodSafeParseResult<JobData<K>>;
  const backoff = def.backoff;
  const baseMs = o.backoffBaseMs ?? 1000;
  const worker = new Worker(
    def.queue,
    async (job, token, signal) => {
      const parsed = parse(job);
      if (!parsed.success) throw new UnrecoverableError(`invalid ${kind} job data: ${z.prettifyError(parsed.error)}`);
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
      prefix: o.prefix,
      concurrency: o.concurrency,
      telemetry: o.telemetry,
      ...o.lock,
      ...(o.limiter ? { limiter: o.limiter } : {}),
      ...(backoff ? { settings: { backoffStrategy: (attemptsMade: number, _type?: string, err?: Error) => backoff(attemptsMade, err, baseMs) } } : {}),
    },
  );
  worker.on('error', (err) => o.logger.error({ err: err.message }, `${kind} worker error`));
  worker.on('failed', (job, err) => {
    const parsed = job ? parse(job) : undefined;
    o.logger.warn({ job_id: job?.id, ...(parsed?.success ? def.logFields(parsed.data as never) : {}), attempt: job?.attemptsMade, err: err.message }, `${kind} job attempt failed`);
  });
  return worker;
}

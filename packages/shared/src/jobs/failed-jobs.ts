import type { Job, Worker } from 'bullmq';
import type { Logger } from '../infra/logger.js';
import type { RedisClient } from '../infra/redis.js';
import type { QueueName } from './catalog.js';
import type { JobQueues } from './job-queues.js';

/** Failed jobs read at once while sweeping. */
const PAGE_SIZE = 100;
/** The longest close() waits for a sweep under way. */
const CLOSE_WAIT_MS = 1000;
/** How far a sweep's window reaches back before the previous sweep began: a job failed meanwhile, clocks differ. */
const OVERLAP_MS = 5 * 60_000;

/**
 * The reason BullMQ gives a job that stalled more often than its workers' maxStalledCount (its
 * worker died, or lost its lock, each time it ran it): BullMQ fails it on its next pickup,
 * without running it, with this reason (bullmq's moveStalledJobsToWait script).
 */
export const STALLED_OUT_REASON = 'job stalled more than allowable limit';

/** Whether BullMQ failed `job` for stalling too often, rather than a processor's error failing it. */
export function failedByStalling(job: Pick<Job, 'failedReason'>): boolean {
  return job.failedReason === STALLED_OUT_REASON;
}

/** What is done for a job that failed for good; true if it did something (a sweep counts those). */
export type FailedJobHandler = (job: Job) => Promise<boolean>;

/**
 * The jobs of one queue that fail for good, each handed to `handle`: at once by the worker that
 * failed it (its `failed` event, once BullMQ has moved the job to failed: a job that will be
 * retried is not handed), and otherwise by a sweep of the queue's failed sets of the cells
 * served, every `intervalMs`: should that worker die first, or should BullMQ fail the job without
 * a worker's event (a job that stalled too often is failed by the stalled-jobs check). A job may
 * be handed more than once (by its event and a sweep, or by two processes' sweeps): `handle`
 * must be idempotent. A job whose handling threw is handed again by the next sweep.
 */
export class FailedJobs {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  /** Failed jobs at or after this time (ms) are still looked at; older ones were swept. */
  private since: number;
  /** Ids swept since `since`, so that the windows' overlap hands nothing twice. */
  private readonly swept = new Map<string, number>();

  constructor(
    private readonly opts: {
      jobs: JobQueues;
      /** The connection of `jobs`, to read the failed sets with. */
      redis: RedisClient;
      queue: QueueName;
      /** The cells whose queue this process serves. */
      cells: number[];
      /** How far back the first sweep looks (a job may have failed while no worker ran). */
      lookbackMs: number;
      logger: Logger;
      /** What the jobs are, for the log ("a round job", "a step job"). */
      what: string;
      handle: FailedJobHandler;
      /** Failed jobs read at once while sweeping. @defaultValue 100 */
      pageSize?: number;
    },
  ) {
    this.since = Date.now() - opts.lookbackMs;
  }

  /** Hands each job of `worker` that fails for good to the handler. */
  watch(worker: Worker): void {
    worker.on('failed', (job) => {
      // finishedOn is set only when the job was moved to failed, not when it will be retried.
      if (!job?.finishedOn) return;
      this.opts
        .handle(job)
        .catch((err: Error) =>
          this.opts.logger.warn(
            { job_id: job.id, err: err.message },
            `${this.opts.what} failed for good and could not be handled; the sweep will`,
          ),
        );
    });
  }

  /** Sweeps every `intervalMs` until closed. */
  start(intervalMs: number): void {
    const tick = () => {
      this.running = this.sweep()
        .then(() => undefined)
        .catch((err: Error) =>
          this.opts.logger.warn({ err: err.message }, `sweep of failed ${this.opts.queue} jobs failed; will try again`),
        )
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  /**
   * Hands every job that has failed for good since the last sweep to the handler; returns how
   * many it did something for. A job whose handling threw is looked at again by the next sweep.
   */
  async sweep(): Promise<number> {
    const startedAt = Date.now();
    const pageSize = this.opts.pageSize ?? PAGE_SIZE;
    let handled = 0;
    let unfinished = false;
    for (const cell of this.opts.cells) {
      const queue = this.opts.jobs.queue(this.opts.queue, cell);
      const key = queue.keys.failed;
      // Oldest first, from the window's start, a page at a time by score (the time each failed):
      // the next page starts at the last score read, past the jobs of that score read already.
      // It is read from the last job read, to see that none of those left the set meanwhile
      // (retried, removed); if one did, that score is read again from its first job.
      for (let min = this.since, skip = 0, last: string | undefined; ; ) {
        const from = last === undefined ? skip : skip - 1;
        const read = await this.opts.redis.zrangebyscore(
          key,
          min,
          '+inf',
          'WITHSCORES',
          'LIMIT',
          from,
          pageSize + (from < skip ? 1 : 0),
        );
        if (last !== undefined && read[0] !== last) {
          [skip, last] = [0, undefined];
          continue;
        }
        const page = last === undefined ? read : read.slice(2);
        for (let i = 0; i < page.length; i += 2) {
          const id = page[i]!;
          if (this.swept.has(id)) continue;
          try {
            const job = await queue.getJob(id);
            if (job && (await this.opts.handle(job))) handled++;
            this.swept.set(id, Number(page[i + 1]));
          } catch (err) {
            unfinished = true;
            this.opts.logger.warn(
              { job_id: id, err: (err as Error).message },
              `${this.opts.what} failed for good and could not be handled; will try again`,
            );
          }
        }
        if (page.length < 2 * pageSize) break;
        const score = Number(page.at(-1));
        let sameScore = 0;
        for (let i = page.length - 1; i > 0 && Number(page[i]) === score; i -= 2) sameScore++;
        skip = score === min ? skip + sameScore : sameScore;
        min = score;
        last = page.at(-2);
      }
    }
    if (!unfinished) this.since = startedAt - OVERLAP_MS;
    for (const [id, at] of this.swept) if (at < this.since) this.swept.delete(id);
    return handled;
  }

  /**
   * Stops sweeping; waits for a sweep under way for a second at most (a command of it may be
   * waiting out a failover: the sweep is made again by any process, so nothing is lost).
   */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.running, new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
    clearTimeout(timer);
  }
}

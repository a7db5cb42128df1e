import type { Worker } from 'bullmq';
import { QUEUES, type JobQueues, type Logger, type RedisClient, type RunStore, type ToolCallJob, type ToolRoundJob } from '@agentq/shared';

/** The data of a job that may add its run's next step (see fan-out.ts). */
type RoundJobData = Pick<ToolCallJob | ToolRoundJob, 'runId' | 'depth' | 'nextStep'>;

/** Failed jobs read at once while sweeping. */
const PAGE_SIZE = 100;
/** How far a sweep's window reaches back before the previous sweep began: a job failed meanwhile, clocks differ. */
const OVERLAP_MS = 5 * 60_000;

/** The job data, if it is that of a job that adds its run's next step. */
function roundJobData(data: unknown): RoundJobData | undefined {
  const d = data as Partial<RoundJobData> | undefined;
  return d?.nextStep && typeof d.runId === 'string' && Number.isInteger(d.depth) ? (d as RoundJobData) : undefined;
}

/**
 * The next step of a round that is one job, with no flow parent to release it (fan-out.ts): the
 * job adds it once its calls are stored, and, should the job fail for good, this adds it anyway,
 * as a flow releases its parent when a child fails (ignoreDependencyOnFailure); that step then
 * answers the calls without a result with an error text.
 *
 * A job that failed for good is seen at once by the worker that failed it (its `failed` event,
 * after BullMQ has moved the job to failed: a job that may still be retried adds nothing, so no
 * call of it can run after its step has told the model it failed). Should that worker die first,
 * the sweep that every tool-worker makes of the failed jobs of the cells it serves finds it.
 * The step's job id is the run's and the depth's, so adding it while its job is kept adds
 * nothing; the sweep adds none for a run that has ended or whose next step has run (it appends
 * the round: the round's mark in the run), and a step job that comes again after its round was
 * done ends at once (agent-step-processor.ts).
 */
export class NextSteps {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  /** Failed jobs at or after this time (ms) are still looked at; older ones were swept. */
  private since: number;
  /** Ids swept since `since`, so that the windows' overlap adds nothing twice. */
  private readonly swept = new Map<string, number>();

  constructor(
    private readonly opts: {
      /**
       * On the connection the tool results are written on: the step is added after them, in
       * the order sent, so it finds every result stored.
       */
      jobs: JobQueues;
      /** The connection of `jobs`, to read the failed sets with. */
      redis: RedisClient;
      /** Where the sweep reads whether a run still needs the step. */
      store: RunStore;
      logger: Logger;
      /** The cells whose tool queue this worker serves. */
      cells: number[];
      /** How far back the first sweep looks (a job may have failed while no tool-worker ran). */
      lookbackMs: number;
      /** Failed jobs read at once while sweeping. @defaultValue 100 */
      pageSize?: number;
    },
  ) {
    this.since = Date.now() - opts.lookbackMs;
  }

  /** Adds the next step of the job's run, if the job is one that adds it. */
  async add(data: Pick<RoundJobData, 'runId' | 'depth'> & { nextStep?: RoundJobData['nextStep'] }): Promise<void> {
    if (!data.nextStep) return;
    await this.opts.jobs.enqueue('agentStep', { runId: data.runId, depth: data.depth + 1, ...data.nextStep });
  }

  /** A tool-job handler that adds the next step once its calls are stored. */
  wrap<D extends RoundJobData, R, C>(handler: (data: D, ctx: C) => Promise<R>): (data: D, ctx: C) => Promise<R> {
    return async (data, ctx) => {
      const result = await handler(data, ctx);
      await this.add(data);
      return result;
    };
  }

  /** Adds the next step of each job of `worker` that fails for good. */
  watch(worker: Worker): void {
    worker.on('failed', (job) => {
      const data = roundJobData(job?.data);
      // finishedOn is set only when the job was moved to failed, not when it will be retried.
      if (!job?.finishedOn || !data) return;
      this.add(data).then(
        () => this.opts.logger.info({ run_id: data.runId, depth: data.depth, job_id: job.id }, 'a round job failed for good; added the next step'),
        (err: Error) => this.opts.logger.warn({ run_id: data.runId, job_id: job.id, err: err.message }, 'could not add the next step of a failed round; the sweep adds it'),
      );
    });
  }

  /** Sweeps every `intervalMs` until closed. */
  start(intervalMs: number): void {
    const tick = () => {
      this.running = this.sweep()
        .then(() => undefined)
        .catch((err: Error) => this.opts.logger.warn({ err: err.message }, 'sweep of failed round jobs failed; will try again'))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  /**
   * Adds the next step of every job that adds one, has failed for good since the last sweep,
   * and whose run still needs it; returns how many steps it added. A job whose step could not be
   * added is looked at again by the next sweep.
   */
  async sweep(): Promise<number> {
    const startedAt = Date.now();
    const pageSize = this.opts.pageSize ?? PAGE_SIZE;
    let added = 0;
    let unfinished = false;
    for (const cell of this.opts.cells) {
      const key = this.opts.jobs.queue(QUEUES.tool, cell).keys.failed;
      // Oldest first, from the window's start, a page at a time by score (the time each failed):
      // the next page starts at the last score read, past the jobs of that score read already.
      // It is read from the last job read, to see that none of those left the set meanwhile
      // (retried, removed); if one did, that score is read again from its first job.
      for (let min = this.since, skip = 0, last: string | undefined; ; ) {
        const from = last === undefined ? skip : skip - 1;
        const read = await this.opts.redis.zrangebyscore(key, min, '+inf', 'WITHSCORES', 'LIMIT', from, pageSize + (from < skip ? 1 : 0));
        if (last !== undefined && read[0] !== last) {
          [skip, last] = [0, undefined];
          continue;
        }
        const page = last === undefined ? read : read.slice(2);
        for (let i = 0; i < page.length; i += 2) {
          const id = page[i]!;
          if (this.swept.has(id)) continue;
          try {
            if (await this.sweepJob(cell, id)) added++;
            this.swept.set(id, Number(page[i + 1]));
          } catch (err) {
            unfinished = true;
            this.opts.logger.warn({ job_id: id, err: (err as Error).message }, 'could not add the next step of a failed round; will try again');
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
    return added;
  }

  /** Adds the next step of one failed job, if it adds one and its run still needs it. */
  private async sweepJob(cell: number, id: string): Promise<boolean> {
    const job = await this.opts.jobs.queue(QUEUES.tool, cell).getJob(id);
    const data = roundJobData(job?.data);
    if (!data) return false;
    // A run that has ended, or whose round the next step has appended, needs nothing.
    if (!(await this.opts.store.transcript.needsStepAfter(data.runId, data.depth))) return false;
    await this.add(data);
    this.opts.logger.info({ run_id: data.runId, depth: data.depth, job_id: id }, 'a round job failed for good; added the next step');
    return true;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

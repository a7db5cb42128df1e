import { AgentqError, QUEUES, type JobContext, type JobQueues, type Logger, type RedisClient, type ToolCallJob, type ToolRoundJob } from '@agentq/shared';

/** The data of a job that may add its run's next step (see fan-out.ts). */
type RoundJobData = Pick<ToolCallJob | ToolRoundJob, 'runId' | 'depth' | 'nextStep'>;

/** Failed jobs read per page while sweeping. */
const PAGE = 100;

/**
 * The next step of a round that is one job, with no flow parent to release it (fan-out.ts): the
 * job adds it once its calls are stored, and, should the job fail for good, this adds it anyway,
 * as a flow would release its parent (ignoreDependencyOnFailure); that step then records the
 * calls without a result as failed.
 *
 * A job that fails while its processor runs (its last attempt, or a fault no retry fixes) adds
 * the step before it fails. One that fails without its processor (stalled past BullMQ's limit:
 * its worker was killed each time) is found by the sweep, which every tool-worker runs over the
 * failed jobs of the cells it serves. Adding a step twice adds one job (its id is the run's and
 * the depth's); a step that comes again after its round was done ends at once (the round's mark
 * in the run).
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
      logger: Logger;
      /** The cells whose tool queue this worker serves. */
      cells: number[];
      /** How far back the first sweep looks (a job may have failed while no tool-worker ran). */
      lookbackMs: number;
    },
  ) {
    this.since = Date.now() - opts.lookbackMs;
  }

  /** Adds the next step of the job's run, if the job is one that adds it. */
  async add(data: RoundJobData): Promise<void> {
    if (!data.nextStep) return;
    await this.opts.jobs.enqueue('agentStep', { runId: data.runId, depth: data.depth + 1, ...data.nextStep });
  }

  /**
   * A tool-job handler that adds the next step after its calls are stored, or before it fails
   * for good. A failure that will be retried, and BullMQ's control-flow errors (a job moved to
   * wait elsewhere), add nothing.
   */
  wrap<D extends RoundJobData, R>(handler: (data: D, ctx: JobContext) => Promise<R>): (data: D, ctx: JobContext) => Promise<R> {
    return async (data, ctx) => {
      let result: R;
      try {
        result = await handler(data, ctx);
      } catch (err) {
        const { job } = ctx;
        const forGood = (err instanceof AgentqError && !err.retryable) || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        if (data.nextStep && forGood && !ctx.signal?.aborted) {
          await this.add(data).catch((e: Error) => this.opts.logger.warn({ run_id: data.runId, err: e.message }, 'could not add the next step of a failed round; the sweep adds it'));
        }
        throw err;
      }
      await this.add(data);
      return result;
    };
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
   * Adds the next step of every job that adds one and has failed for good since the last sweep
   * (by the failed set's scores, the time each job failed; a page at a time); returns how many
   * steps it added.
   */
  async sweep(): Promise<number> {
    const startedAt = Date.now();
    let added = 0;
    for (const cell of this.opts.cells) {
      const queue = this.opts.jobs.queue(QUEUES.tool, cell);
      for (let offset = 0; ; offset += PAGE) {
        const ids = await this.opts.redis.zrevrangebyscore(queue.keys.failed, '+inf', this.since, 'LIMIT', offset, PAGE);
        for (const id of ids) {
          if (this.swept.has(id)) continue;
          const job = await queue.getJob(id);
          const data = job?.data as Partial<RoundJobData> | undefined;
          this.swept.set(id, job?.finishedOn ?? startedAt);
          if (!data?.nextStep || typeof data.runId !== 'string' || !Number.isInteger(data.depth)) continue;
          await this.add(data as RoundJobData);
          added++;
          this.opts.logger.info({ run_id: data.runId, depth: data.depth, job_id: id }, 'a round job failed for good; added the next step');
        }
        if (ids.length < PAGE) break;
      }
    }
    // The next window overlaps this one (a job may fail while a sweep reads), by a margin for clocks.
    this.since = startedAt - 60_000;
    for (const [id, at] of this.swept) if (at < this.since) this.swept.delete(id);
    return added;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}

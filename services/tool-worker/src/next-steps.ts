import type { Job, Worker } from 'bullmq';
import {
  FailedJobs,
  QUEUES,
  type JobQueues,
  type Logger,
  type RedisClient,
  type RunStore,
  type ToolCallJob,
  type ToolRoundJob,
} from '@agentq/shared';

/** The data of a job that may add its run's next step (see fan-out.ts). */
type RoundJobData = Pick<ToolCallJob | ToolRoundJob, 'runId' | 'depth' | 'nextStep'>;

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
 * A job that failed for good is seen at once by the worker that failed it, else by the sweep
 * that every tool-worker makes of the failed jobs of the cells it serves (FailedJobs): a job that
 * may still be retried adds nothing, so no call of it can run after its step has told the model
 * it failed. The step's job id is the run's and the depth's, so adding it while its job is kept
 * adds nothing; none is added for a run that has ended or whose next step has run (it appends
 * the round: the round's mark in the run), and a step job that comes again after its round was
 * done ends at once (agent-step-processor.ts).
 */
export class NextSteps {
  private readonly failed: FailedJobs;

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
    this.failed = new FailedJobs({
      ...opts,
      queue: QUEUES.tool,
      what: 'a round job',
      handle: (job) => this.addAfterFailure(job),
    });
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
    this.failed.watch(worker);
  }

  /** Sweeps every `intervalMs` until closed. */
  start(intervalMs: number): void {
    this.failed.start(intervalMs);
  }

  /**
   * Adds the next step of every job that adds one, has failed for good since the last sweep,
   * and whose run still needs it; returns how many steps it added.
   */
  sweep(): Promise<number> {
    return this.failed.sweep();
  }

  /** Adds the next step of one failed job, if it adds one and its run still needs it. */
  private async addAfterFailure(job: Job): Promise<boolean> {
    const data = roundJobData(job.data);
    if (!data) return false;
    // A run that has ended, or whose round the next step has appended, needs nothing.
    if (!(await this.opts.store.transcript.needsStepAfter(data.runId, data.depth))) return false;
    await this.add(data);
    this.opts.logger.info(
      { run_id: data.runId, depth: data.depth, job_id: job.id },
      'a round job failed for good; added the next step',
    );
    return true;
  }

  close(): Promise<void> {
    return this.failed.close();
  }
}

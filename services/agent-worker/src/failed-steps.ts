import { isRunId } from '@agentq/shared/core';
import { type Logger, type RedisClient } from '@agentq/shared/infra';
import { cellOf, FailedJobs, failedByStalling, QUEUES, toolCallJobId, type JobQueues } from '@agentq/shared/jobs';
import { type Runs } from '@agentq/shared/runs';

/**
 * Ends the runs whose step job BullMQ failed for good without the step's processor ending the
 * run: a job that stalled too often (its worker died mid-step on each delivery: BullMQ's
 * stalled-jobs check fails it without calling the processor), whose data no longer parses, or
 * whose last attempt threw before it could end the run. Nothing else would add that run's next
 * step: it would stay running for ever, holding its tenant's slot. It fails, its slot is released
 * and its webhook sent, as when a step fails for good in the processor: with
 * `step_crashed_worker` when the job stalled out (a step whose worker died each time it ran it,
 * such as one whose answer exhausted the heap, fails its run rather than take down every worker
 * that picks it up), else `step_failed`. A run
 * that has ended already is left as it is, and so is one the step carried on before its job was
 * failed (its round's tool job exists: a delivery that lost its lock had fanned out).
 */
export function failedSteps(opts: {
  jobs: JobQueues;
  redis: RedisClient;
  runs: Runs;
  logger: Logger;
  cells: number[];
  lookbackMs: number;
}): FailedJobs {
  const carriedOn = async (runId: string, depth: number): Promise<boolean> => {
    // The first call of a round is the first of a job's calls, whichever job it shares.
    const tools = opts.jobs.queue(QUEUES.tool, cellOf(runId, opts.jobs.cells));
    return (await tools.getJobState(toolCallJobId({ runId, depth, index: 0 }))) !== 'unknown';
  };
  return new FailedJobs({
    ...opts,
    queue: QUEUES.agent,
    what: 'a step job',
    handle: async (job) => {
      const data = job.data as { runId?: unknown; depth?: unknown } | undefined;
      const runId = data?.runId;
      if (typeof runId !== 'string' || !isRunId(runId)) return false;
      if (Number.isInteger(data?.depth) && (await carriedOn(runId, data!.depth as number))) return false;
      const reason = (job.failedReason || 'no reason given').slice(0, 500);
      const crashed = failedByStalling(job);
      const ended = await opts.runs.finish(runId, {
        status: 'failed',
        stopReason: 'error',
        error: crashed
          ? {
              code: 'step_crashed_worker',
              message:
                "the agent-worker running this run's model step died each time it ran it (or stopped renewing its lock): the step is not run again, so that it takes no more workers down",
            }
          : {
              code: 'step_failed',
              message: `a model step of this run failed for good and was not retried (${reason})`,
            },
      });
      if (ended)
        opts.logger.error(
          { run_id: runId, job_id: job.id, reason, stalls: job.stalledCounter },
          crashed
            ? 'a step job stalled out (its worker died each time it ran it); the run fails'
            : 'a step job failed for good; the run fails',
        );
      return ended !== null;
    },
  });
}

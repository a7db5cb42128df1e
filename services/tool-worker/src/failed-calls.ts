import type { Job } from 'bullmq';
import { isTerminal, modelText, toolFailed } from '@agentq/shared/core';
import { type Logger, type RedisClient } from '@agentq/shared/infra';
import { eventOutput, type RunStore, type ToolResultRecord } from '@agentq/shared/store';
import { FailedJobs, JOB_KINDS, QUEUES, type JobQueues, type ToolCallsJob } from '@agentq/shared/jobs';

/**
 * The tool jobs that fail for good (stalled too often, or Redis refused their last attempt's
 * writes): each call of the job that has no result gets an error result (`no_result`), stored as
 * any result is, so that the round completes and its next step is released the one way
 * (`release`), and the model reads that the call failed. Found at once by the worker that failed
 * the job, else by the sweep every tool-worker makes of the failed jobs of the cells it serves.
 * A job that may still be retried is not handed over, so no call of it can run after the model
 * was told it failed.
 */
export function failedCalls(opts: {
  jobs: JobQueues;
  /** The connection of `jobs`, to read the failed sets with. */
  redis: RedisClient;
  store: RunStore;
  logger: Logger;
  cells: number[];
  lookbackMs: number;
  /** Failed jobs read at once while sweeping. @defaultValue 100 */
  pageSize?: number;
  release: (data: ToolCallsJob, opts: { roundComplete: boolean }) => Promise<void>;
}): FailedJobs {
  return new FailedJobs({
    ...opts,
    queue: QUEUES.tool,
    what: 'a tool job',
    handle: async (job: Job) => {
      const parsed = JOB_KINDS.toolCalls.schema.safeParse(job.data);
      if (!parsed.success) return false;
      const data = parsed.data;
      // A run that has ended (or is gone) needs no result and no next step.
      const [status] = await opts.store.runs.statuses([data.runId]);
      if (!status || isTerminal(status)) return false;
      const reason = (job.failedReason || 'no reason given').slice(0, 300);
      const now = new Date().toISOString();
      const outcome = toolFailed('no_result', `the tool call failed and no result was recorded (${reason})`);
      const stored = await Promise.all(
        data.calls.map((call) => {
          const rec: ToolResultRecord = {
            id: call.toolCallId,
            name: call.name,
            status: 'failed',
            outcome: outcome.kind,
            output: modelText(call.name, outcome),
            is_error: true,
            attempts: job.attemptsMade,
            duration_ms: 0,
            started_at: now,
            completed_at: now,
          };
          // A call whose result is stored keeps it: complete() stores nothing over it.
          return opts.store.toolCalls.complete(
            data.runId,
            data.depth,
            call.index,
            rec,
            {
              depth: data.depth,
              index: call.index,
              tool_call_id: call.toolCallId,
              name: call.name,
              is_error: true,
              duration_ms: 0,
              outcome: outcome.kind,
              ...eventOutput(rec.output),
            },
            { count: data.count, ancestors: data.ancestors ?? [] },
          );
        }),
      );
      const roundComplete = stored.some((s) => s.roundComplete);
      // Handed again (by its event and a sweep), the job finds its calls stored: the step is
      // released then too, should the first hand-over have died before it.
      await opts.release(data, { roundComplete });
      const recorded = stored.some((s) => s.storedNow);
      if (recorded) {
        opts.logger.info(
          { run_id: data.runId, depth: data.depth, job_id: job.id, reason },
          'a tool job failed for good; its calls without a result were recorded as failed',
        );
      }
      return recorded;
    },
  });
}

import type { Job } from 'bullmq';
import { AGENTQ, withJobSpan } from '@agentq/shared/infra';
import { type JobInput } from '@agentq/shared/jobs';

/**
 * Runs one model step in an `agent_step` span, a child of the run's span (through the
 * `traceparent` in the job data). The model call and the tool jobs the step adds become its
 * children; the next step is again a child of the run.
 */
export function traceAgentStep<T>(data: JobInput<'agentStep'>, job: Job, fn: () => Promise<T>): Promise<T> {
  return withJobSpan(
    'agent_step',
    {
      carrier: { traceparent: data.traceparent },
      attributes: {
        [AGENTQ.runId]: data.runId,
        [AGENTQ.depth]: data.depth,
        [AGENTQ.jobId]: String(job.id),
        [AGENTQ.attempt]: job.attemptsMade + 1,
      },
    },
    async (span) => {
      const result = await fn();
      const r = result as { outcome?: string; skipped?: string; failed?: string } | undefined;
      span.setAttribute(
        AGENTQ.outcome,
        r?.outcome ?? (r?.skipped ? `skipped: ${r.skipped}` : r?.failed ? `failed: ${r.failed}` : 'unknown'),
      );
      return result;
    },
  );
}

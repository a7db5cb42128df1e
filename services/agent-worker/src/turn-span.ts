import type { Job } from 'bullmq';
import { AGENTQ, withJobSpan } from '@agentq/shared';

/**
 * Runs one agent turn in an `agent_turn` span, a child of the run's span (through the
 * `traceparent` in the job data). The model call and the tool jobs the turn adds become its
 * children; the next turn is again a child of the run.
 */
export function traceAgentTurn<T>(job: Job, fn: () => Promise<T>): Promise<T> {
  const data = job.data as { runId?: string; depth?: number; traceparent?: string };
  return withJobSpan(
    'agent_turn',
    {
      carrier: { traceparent: data.traceparent },
      attributes: { [AGENTQ.runId]: String(data.runId), [AGENTQ.depth]: Number(data.depth), [AGENTQ.jobId]: String(job.id), [AGENTQ.attempt]: job.attemptsMade + 1 },
    },
    async (span) => {
      const result = await fn();
      const r = result as { outcome?: string; skipped?: string; failed?: string } | undefined;
      span.setAttribute(AGENTQ.outcome, r?.outcome ?? (r?.skipped ? `skipped: ${r.skipped}` : r?.failed ? `failed: ${r.failed}` : 'unknown'));
      return result;
    },
  );
}

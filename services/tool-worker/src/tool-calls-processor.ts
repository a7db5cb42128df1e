import type { JobContext, ToolCallsJob } from '@agentq/shared/jobs';
import { type RoundCall, roundCall, type ToolCallResult } from './tool-call-processor.js';

/** What a tool-calls job ends with: each call's index, and why it ran nothing if it did not. */
export interface ToolCallsJobResult {
  calls: Array<Omit<ToolCallResult, 'record' | 'roundComplete'>>;
}

/**
 * Runs a job's calls at once, each begun, run and stored on its own (`runCall`), and ends when
 * every call has. The next step is then enqueued (`releaseNextStep`) if a result of this job
 * completed the round, or if the job came again after doing so (every call was done before: the
 * attempt that completed the round may have died before it enqueued the step). A call that throws
 * (its server was unreachable and sending it again is safe) fails the job once the others have
 * settled, so BullMQ retries the job: the calls whose results are stored are then skipped as done,
 * and only the rest run again.
 */
export async function processToolCalls(
  data: ToolCallsJob,
  ctx: JobContext,
  runCall: (call: RoundCall, ctx: JobContext) => Promise<Omit<ToolCallResult, 'record'>>,
  releaseNextStep: (data: ToolCallsJob, opts: { roundComplete: boolean }) => Promise<void>,
): Promise<ToolCallsJobResult> {
  const settled = await Promise.allSettled(data.calls.map((_, i) => runCall(roundCall(data, i), ctx)));
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  const results = settled.map((s) => (s as PromiseFulfilledResult<Omit<ToolCallResult, 'record'>>).value);
  if (results.some((r) => r.roundComplete)) await releaseNextStep(data, { roundComplete: true });
  else if (results.every((r) => r.skipped === 'done before')) await releaseNextStep(data, { roundComplete: false });
  return { calls: results.map(({ index, skipped }) => ({ index, ...(skipped ? { skipped } : {}) })) };
}

import type { JobContext, ToolCallJob, ToolRoundJob } from '@agentq/shared';
import type { ToolCallJobResult } from './tool-call-processor.js';

/** What a tool-round job ends with: each call's index, and why it ran nothing if it did not. */
export interface ToolRoundJobResult {
  calls: Array<Omit<ToolCallJobResult, 'record'>>;
}

/** The tool-call job data of one call of a round: what it would carry in a job of its own. */
export function callOfRound(data: ToolRoundJob, call: ToolRoundJob['calls'][number]): ToolCallJob {
  const { calls: _calls, ...shared } = data;
  return { ...shared, ...call };
}

/**
 * Runs a round's calls at once, each as its own tool-call job would run (`runCall`: begun, run
 * and stored under the call), and ends when every call has. A call that throws (its server was
 * unreachable and sending it again is safe) fails the job once the others have settled, so
 * BullMQ retries the job: the calls whose results are stored are then skipped as done, and only
 * the rest run again.
 */
export async function processToolRound(
  data: ToolRoundJob,
  ctx: JobContext,
  runCall: (call: ToolCallJob, ctx: JobContext) => Promise<Omit<ToolCallJobResult, 'record'>>,
): Promise<ToolRoundJobResult> {
  const settled = await Promise.allSettled(data.calls.map((call) => runCall(callOfRound(data, call), ctx)));
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return { calls: settled.map((s) => (s as PromiseFulfilledResult<Omit<ToolCallJobResult, 'record'>>).value) };
}

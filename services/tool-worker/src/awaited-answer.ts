import { DelayedError } from 'bullmq';
import { isTerminal, runDeadline, toolFailed, toolOk, toolRejected, type ToolOutcome } from '@agentq/shared/core';
import { type RunStore } from '@agentq/shared/store';
import { type JobContext } from '@agentq/shared/jobs';
import { type ActionType, type RunActions, type Runs } from '@agentq/shared/runs';

export interface AwaitedAnswerDeps {
  store: RunStore;
  runs: Runs;
  actions: RunActions;
  /** The longest the job stays parked at once (ACTION_PARK_MAX_MS). */
  parkMs: number;
}

/** What a woken call that waited for an answer does. */
export type AnswerOutcome =
  /** Approved: run the call with these arguments (the recorded ones, or the edited ones). */
  | { kind: 'run'; arguments: string; edited: boolean }
  /** No call: this is its result (a rejection, a client tool's output, an answer, an expiry). */
  | { kind: 'result'; outcome: ToolOutcome }
  /** Nothing to do: the run has ended (cancelled, or stopped by this expiry). */
  | { kind: 'skip'; why: string };

const EXPIRED: Record<ActionType, string> = {
  approval: 'no one approved this call in time',
  client_tool: "the caller did not return this tool's output in time",
  input: 'the user did not answer in time',
};

/**
 * Reads the decision on the request a woken call waited for, and what it comes to. Only the
 * decision stored counts (never the job's own data), so a rejected or expired call never runs,
 * whatever crashed in between. Woken with no decision before its request expires (it was parked
 * the longest at once), the job parks itself again (throws DelayedError); an answer stored
 * between the read and the park found the job active, so it is read again after parking.
 */
export async function awaitedAnswer(
  actionId: string,
  runId: string,
  ctx: JobContext,
  deps: AwaitedAnswerDeps,
): Promise<AnswerOutcome> {
  const [stored, run] = await Promise.all([deps.store.actions.get(actionId), deps.store.runs.getState(runId)]);
  if (!stored || !run) return { kind: 'skip', why: 'missing' };
  if (isTerminal(run.status)) return { kind: 'skip', why: run.status };
  const now = Date.now();
  const decision = await deps.actions.decisionOnWake(run, stored, now);
  if (!decision) {
    const expires = stored.record.expires_at ? Date.parse(stored.record.expires_at) : Infinity;
    await ctx.job.moveToDelayed(Math.min(expires, now + deps.parkMs), ctx.token);
    if (await deps.store.actions.decision(runId, actionId)) await ctx.job.promote().catch(() => {});
    throw new DelayedError();
  }
  switch (decision.decision) {
    case 'approved':
      return {
        kind: 'run',
        arguments: decision.arguments ?? stored.record.arguments,
        edited: decision.arguments !== undefined,
      };
    case 'rejected':
      return { kind: 'result', outcome: toolRejected(decision.reason) };
    case 'answered':
      return { kind: 'result', outcome: toolOk(decision.output ?? '') };
    case 'cancelled':
      return { kind: 'skip', why: 'cancelled' };
    case 'expired': {
      // At the run's deadline the next step ends the run (`timeout`); before it, the policy says.
      const deadline = runDeadline(run.spec, Date.parse(run.createdAt));
      const pastDeadline = deadline !== undefined && deadline <= Date.parse(decision.at);
      if (stored.record.on_timeout === 'stop' && !pastDeadline) {
        // Its sub-runs still at work (another call of the round) stop with it.
        await deps.runs.endTree(runId, { status: 'incomplete', stopReason: 'approval_timeout' });
        return { kind: 'skip', why: 'approval_timeout' };
      }
      return { kind: 'result', outcome: toolFailed('timeout', EXPIRED[stored.record.type]) };
    }
  }
}

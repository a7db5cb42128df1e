import type { RunStore } from '@agentq/shared/store';
import type { JobQueues, ToolCallsJob } from '@agentq/shared/jobs';
import type { Runs } from '@agentq/shared/runs';

export interface NextStepDeps {
  store: RunStore;
  runs: Runs;
  jobs: JobQueues;
}

/**
 * Releases a run's next step once its round is complete: the one way a step follows a round.
 * Called by the job whose result completed the round (`roundComplete`), and by a job that came
 * again with every call done before (the attempt that completed the round may have died before
 * this), which adds the step only if the round is complete and the run goes on. The step's job id
 * is the run's and the depth's, so a step added twice is added once; a step job that comes after
 * its run's next round is done ends at once (agent-step-processor.ts). A run that gave its slot up
 * while the round's sub-runs worked takes it back first.
 */
export async function releaseNextStep(
  deps: NextStepDeps,
  data: Pick<ToolCallsJob, 'runId' | 'depth' | 'nextStep'>,
  opts: { roundComplete: boolean },
): Promise<void> {
  if (!opts.roundComplete && !(await deps.store.transcript.roundComplete(data.runId, data.depth))) return;
  const { resumes, ...next } = data.nextStep;
  if (resumes) {
    const run = await deps.store.runs.getState(data.runId);
    if (run) await deps.runs.resumed(run.tenant, [run.id], 'subruns');
  }
  await deps.jobs.enqueue('agentStep', { runId: data.runId, depth: data.depth + 1, ...next });
}

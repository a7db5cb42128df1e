import type { ChatMessage, RunSpec } from '@agentq/shared/core';
import type { JobInput, JobQueues } from '@agentq/shared/jobs';
import type { RunState, RunStore, StepInput } from '@agentq/shared/store';
import type { CallPlan, StepPlan } from './step-decision.js';

/** The round that sends an answer that failed the response_format back to the model, with why. */
export function repairMessage(error: { message: string }): ChatMessage {
  return {
    role: 'user',
    content:
      `Your answer does not match the required response format: ${error.message}. ` +
      'Answer again, with only a corrected answer that matches the format.',
  };
}

/** How many times a run sends an answer back to be repaired (structured_output_retries, default 1). */
export const repairsAllowed = (spec: Pick<RunSpec, 'structured_output_retries'>) => spec.structured_output_retries ?? 1;

/**
 * The plan of a step that repairs an answer: the model is asked only for the answer again, so
 * tools are offered but disabled; the budgets other than max_depth were checked as for any step.
 */
export function repairPlan(plan: StepPlan, repair: number | undefined): StepPlan {
  if (!repair || plan.kind !== 'call' || plan.toolChoice !== 'auto') return plan;
  return { ...plan, toolChoice: 'none' } satisfies CallPlan;
}

/**
 * After a step at `depth` whose final answer failed the run's response_format: when the run has
 * repairs left, appends the round that says what failed and enqueues the next step, which
 * answers again (its job says which repair it is). False when the run fails instead (no repairs
 * left, another fault, or the run has ended).
 */
export async function repairAnswer(
  deps: { store: RunStore; jobs: JobQueues },
  run: RunState,
  depth: number,
  error: { code: string; message: string },
  repairsDone: number,
): Promise<boolean> {
  if (error.code !== 'invalid_structured_output' || repairsDone >= repairsAllowed(run.spec)) return false;
  // The round first: a step enqueued before it would find its round incomplete.
  if (!(await deps.store.repairs.append(run.id, depth, repairMessage(error)))) return false;
  await deps.jobs.enqueue('agentStep', { runId: run.id, depth: depth + 1, repair: repairsDone + 1 });
  return true;
}

/**
 * A step job that came again after its step and repair round were done (a crash between the
 * round and the next step's enqueue may have lost that enqueue): enqueues the next step again
 * (its job id makes a second add nothing). True if the step was such a step.
 */
export async function resumeRepair(
  deps: { jobs: JobQueues },
  input: Pick<StepInput, 'step'>,
  data: Pick<JobInput<'agentStep'>, 'runId' | 'depth' | 'repair'>,
): Promise<boolean> {
  if (input.step?.error?.code !== 'invalid_structured_output') return false;
  await deps.jobs.enqueue('agentStep', { runId: data.runId, depth: data.depth + 1, repair: (data.repair ?? 0) + 1 });
  return true;
}

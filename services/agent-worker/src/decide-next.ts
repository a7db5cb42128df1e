import type { AssistantMessage, BudgetName, RunSpec, StopReason, ToolCall } from '@agentq/shared';

/** How the next model call is made, or that none is made. */
export type StepPlan =
  | {
      kind: 'call';
      /** `auto`: tools offered; `none`: offered but disabled; `absent`: the run has no tools. */
      toolChoice: 'auto' | 'none' | 'absent';
      /** The budget that is used up, if any. */
      budget: BudgetName | null;
      /** Under the `stop` policy at max_depth: the model may still answer, but tools end the run. */
      stopIfTools: boolean;
    }
  | { kind: 'stop'; budget: BudgetName };

/**
 * Decides the next model call from the budget state and the run's policy: `final_answer`
 * makes one last call with tools disabled; `stop` lets the model answer at max_depth but
 * ends the run if it still wants tools, and ends it at once for tokens and time.
 */
export function planStep(spec: Pick<RunSpec, 'on_budget_exhausted'>, budget: BudgetName | null, hasTools: boolean): StepPlan {
  const offered = hasTools ? 'auto' : 'absent';
  if (!budget) return { kind: 'call', toolChoice: offered, budget: null, stopIfTools: false };
  if (spec.on_budget_exhausted === 'final_answer') return { kind: 'call', toolChoice: hasTools ? 'none' : 'absent', budget, stopIfTools: false };
  if (budget === 'max_depth') return { kind: 'call', toolChoice: offered, budget, stopIfTools: true };
  return { kind: 'stop', budget };
}

/** What a finished model step leads to. */
export type StepOutcome =
  | { kind: 'final_answer'; stopReason: StopReason }
  | { kind: 'tool_calls'; toolCalls: ToolCall[] }
  | { kind: 'budget_exhausted'; budget: BudgetName };

/** Decides what follows a model step: answer, another tool round, or the end of the budget. */
export function decideNext(plan: Extract<StepPlan, { kind: 'call' }>, message: AssistantMessage): StepOutcome {
  const calls = message.tool_calls ?? [];
  if (calls.length > 0 && plan.toolChoice === 'auto') {
    if (plan.stopIfTools && plan.budget) return { kind: 'budget_exhausted', budget: plan.budget };
    return { kind: 'tool_calls', toolCalls: calls };
  }
  return { kind: 'final_answer', stopReason: plan.budget && !plan.stopIfTools ? plan.budget : 'stop' };
}

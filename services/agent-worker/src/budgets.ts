import { runDeadline, type BudgetName, type RunSpec } from '@agentq/shared/core';

/** What the budgets look at, before a model step. */
export interface BudgetInput {
  depth: number;
  /** Tokens used so far by the whole run tree this run belongs to (its usage_total). */
  treeTokens: number;
  /** Tokens used so far by this run and its sub-runs (its usage_total); for subtree_max_total_tokens. */
  runTokens?: number;
  /** US dollars spent so far by the tree (its root's usage_total), where prices are known. */
  treeCostUsd?: number;
  /** US dollars spent so far by this run and its sub-runs; for subtree_max_cost_usd. */
  runCostUsd?: number;
  createdAtMs: number;
  /** The deadline when the run has one of its own or inherits its root's (sub-runs). */
  deadlineAtMs?: number;
  nowMs: number;
  /** The run's tenant has used up its max_tokens_per_day. */
  dayTokensUsedUp?: boolean;
}

/**
 * The budget that is used up before this step, or null. Checked in this order because a
 * passed deadline ends the run whatever else is left.
 */
export function exhaustedBudget(
  spec: Pick<
    RunSpec,
    | 'max_depth'
    | 'max_total_tokens'
    | 'timeout_ms'
    | 'subtree_max_total_tokens'
    | 'max_cost_usd'
    | 'subtree_max_cost_usd'
  >,
  b: BudgetInput,
): BudgetName | null {
  const deadline = b.deadlineAtMs ?? runDeadline(spec, b.createdAtMs);
  if (deadline !== undefined && b.nowMs >= deadline) return 'timeout';
  if (b.dayTokensUsedUp) return 'max_tokens_per_day';
  if (spec.max_total_tokens !== undefined && b.treeTokens >= spec.max_total_tokens) return 'max_total_tokens';
  if (spec.subtree_max_total_tokens !== undefined && (b.runTokens ?? 0) >= spec.subtree_max_total_tokens)
    return 'max_total_tokens';
  if (spec.max_cost_usd !== undefined && (b.treeCostUsd ?? 0) >= spec.max_cost_usd) return 'max_cost_usd';
  if (spec.subtree_max_cost_usd !== undefined && (b.runCostUsd ?? 0) >= spec.subtree_max_cost_usd)
    return 'max_cost_usd';
  if (b.depth >= spec.max_depth) return 'max_depth';
  return null;
}

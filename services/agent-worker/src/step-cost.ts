import type { TokenTally } from '@agentq/shared/runs';
import type { RunState, RunStore } from '@agentq/shared/store';
import type { ModelRoute } from './providers.js';
import type { ModelPrice } from './providers-config.js';

/** What a provider reports a call used. */
export interface CallUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens?: number;
}

/**
 * A call's cost in nano-dollars (an integer, summed exactly in Redis): prompt tokens at the input
 * price, those served from the provider's cache at the cached price when the model has one, and
 * completion tokens at the output price (all per million tokens).
 */
export function costNanos(price: ModelPrice, u: CallUsage): number {
  const cached = price.cached_input_per_mtok === undefined ? 0 : Math.min(u.cached_tokens ?? 0, u.prompt_tokens);
  const usd =
    (u.prompt_tokens - cached) * price.input_per_mtok +
    cached * (price.cached_input_per_mtok ?? 0) +
    u.completion_tokens * price.output_per_mtok;
  // usd is per million tokens: a nano-dollar is a thousandth of that unit.
  return Math.round(usd * 1000);
}

/** A step's usage as stored: the token counts, and `cost_usd` when its model's price is known. */
export function stepUsage(route: ModelRoute, u: CallUsage) {
  const price = route.provider.prices[route.model];
  const usage = {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.total_tokens,
  };
  return price ? { ...usage, cost_usd: costNanos(price, u) / 1e9 } : usage;
}

/** A committed step's tokens and cost counted into its tenant's day, and its spend into the model's metric. */
export function countSpend(
  tokens: TokenTally | undefined,
  tenant: string,
  route: ModelRoute,
  usage: { total_tokens: number; cost_usd?: number },
): void {
  const nanos = usage.cost_usd === undefined ? 0 : Math.round(usage.cost_usd * 1e9);
  tokens?.add(tenant, usage.total_tokens, nanos);
  if (usage.cost_usd !== undefined) route.provider.spent(route.model, usage.cost_usd);
}

/** For a run with a dollar budget: what it and its tree have spent (one read; a run without one reads nothing). */
export async function spentBudget(
  deps: { store: RunStore },
  run: Pick<RunState, 'id' | 'rootRunId'>,
): Promise<{ treeCostUsd: number; runCostUsd: number }> {
  const spent = await deps.store.costs.spent(run);
  return { treeCostUsd: spent.tree, runCostUsd: spent.run };
}

import { describe, expect, it } from 'vitest';
import { exhaustedBudget } from './budgets.js';

const created = Date.parse('2026-01-01T00:00:00.000Z');
const at = (over: Partial<{ depth: number; treeTokens: number; nowMs: number }> = {}) => ({
  depth: 0,
  treeTokens: 0,
  createdAtMs: created,
  nowMs: created + 1_000,
  ...over,
});

describe('exhaustedBudget', () => {
  it('is null while every budget has room', () => {
    expect(
      exhaustedBudget(
        { max_depth: 10, max_total_tokens: 1000, timeout_ms: 60_000 },
        at({ depth: 9, treeTokens: 999, nowMs: created + 59_999 }),
      ),
    ).toBeNull();
  });

  it('ignores the token and time budgets a run did not set', () => {
    expect(exhaustedBudget({ max_depth: 10 }, at({ treeTokens: 10 ** 12, nowMs: created + 10 ** 12 }))).toBeNull();
  });

  it('reports max_depth once max_depth rounds are done (not before)', () => {
    expect(exhaustedBudget({ max_depth: 3 }, at({ depth: 2 }))).toBeNull();
    expect(exhaustedBudget({ max_depth: 3 }, at({ depth: 3 }))).toBe('max_depth');
    expect(exhaustedBudget({ max_depth: 1 }, at({ depth: 1 }))).toBe('max_depth');
  });

  it('reports max_total_tokens when the run tree has used the whole budget', () => {
    expect(exhaustedBudget({ max_depth: 10, max_total_tokens: 500 }, at({ treeTokens: 499 }))).toBeNull();
    expect(exhaustedBudget({ max_depth: 10, max_total_tokens: 500 }, at({ treeTokens: 500 }))).toBe('max_total_tokens');
    expect(exhaustedBudget({ max_depth: 10, max_total_tokens: 500 }, at({ treeTokens: 501 }))).toBe('max_total_tokens');
  });

  it("reports timeout at the deadline, counted from the run's creation", () => {
    expect(exhaustedBudget({ max_depth: 10, timeout_ms: 5_000 }, at({ nowMs: created + 4_999 }))).toBeNull();
    expect(exhaustedBudget({ max_depth: 10, timeout_ms: 5_000 }, at({ nowMs: created + 5_000 }))).toBe('timeout');
    expect(exhaustedBudget({ max_depth: 10, timeout_ms: 5_000 }, at({ nowMs: created + 60_000 }))).toBe('timeout');
  });

  it('names timeout first, then tokens, then depth, when several are used up', () => {
    const spec = { max_depth: 2, max_total_tokens: 100, timeout_ms: 1_000 };
    expect(exhaustedBudget(spec, at({ depth: 2, treeTokens: 100, nowMs: created + 1_000 }))).toBe('timeout');
    expect(exhaustedBudget(spec, at({ depth: 2, treeTokens: 100, nowMs: created + 999 }))).toBe('max_total_tokens');
    expect(exhaustedBudget(spec, at({ depth: 2, treeTokens: 99, nowMs: created + 999 }))).toBe('max_depth');
  });

  it("reports max_total_tokens when a saved agent's sub-run has used its own budget, whatever the tree has left", () => {
    const spec = { max_depth: 10, max_total_tokens: 10_000, subtree_max_total_tokens: 500 };
    expect(exhaustedBudget(spec, { ...at({ treeTokens: 600 }), runTokens: 499 })).toBeNull();
    expect(exhaustedBudget(spec, { ...at({ treeTokens: 600 }), runTokens: 500 })).toBe('max_total_tokens');
  });

  it("reports max_cost_usd once the tree, or a saved agent's sub-run, has spent its dollars", () => {
    expect(exhaustedBudget({ max_depth: 10, max_cost_usd: 0.5 }, { ...at(), treeCostUsd: 0.49 })).toBeNull();
    expect(exhaustedBudget({ max_depth: 10, max_cost_usd: 0.5 }, { ...at(), treeCostUsd: 0.5 })).toBe('max_cost_usd');
    // A tree with no priced model has spent nothing.
    expect(exhaustedBudget({ max_depth: 10, max_cost_usd: 0.5 }, at())).toBeNull();
    const agent = { max_depth: 10, subtree_max_cost_usd: 0.1 };
    expect(exhaustedBudget(agent, { ...at(), treeCostUsd: 5, runCostUsd: 0.1 })).toBe('max_cost_usd');
  });
});

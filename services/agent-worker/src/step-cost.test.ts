import { describe, expect, it } from 'vitest';
import { costNanos, stepUsage } from './step-cost.js';
import { Provider } from './providers.js';

const route = (prices: ConstructorParameters<typeof Provider>[3], model: string) => ({
  provider: new Provider('p', {} as never, {}, prices),
  model,
});

describe('the cost of a model call', () => {
  it('prices prompt and completion tokens per million, in whole nano-dollars', () => {
    // 1,000 × $2.50/M + 100 × $10/M = $0.0025 + $0.001
    expect(
      costNanos(
        { input_per_mtok: 2.5, output_per_mtok: 10 },
        { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100 },
      ),
    ).toBe(3_500_000);
    // 1 token at $0.15/M is 150 nano-dollars, 1 at $0.60/M 600.
    expect(
      costNanos(
        { input_per_mtok: 0.15, output_per_mtok: 0.6 },
        { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      ),
    ).toBe(750);
  });

  it('prices cached prompt tokens apart only when the model has a cached price', () => {
    const u = { prompt_tokens: 1000, completion_tokens: 0, total_tokens: 1000, cached_tokens: 800 };
    expect(costNanos({ input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 }, u)).toBe(
      200 * 2000 + 800 * 500,
    );
    expect(costNanos({ input_per_mtok: 2, output_per_mtok: 8 }, u)).toBe(1000 * 2000);
  });

  it('gives a step cost_usd only when its model has a price', () => {
    const prices = { m: { input_per_mtok: 1, output_per_mtok: 2 } };
    const u = { prompt_tokens: 500, completion_tokens: 50, total_tokens: 550 };
    expect(stepUsage(route(prices, 'm'), u)).toEqual({ ...u, cost_usd: 0.0006 });
    expect(stepUsage(route(prices, 'other'), u)).toEqual(u);
  });
});

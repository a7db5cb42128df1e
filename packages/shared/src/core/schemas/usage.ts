import { z } from 'zod';

/** Token and call counts, per run (`usage`) and per run tree (`usage_total`). */
export const usageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  model_calls: z.number().int(),
  tool_calls: z.number().int(),
  /** US dollars, when the price of a model that answered is known (PROVIDERS_CONFIG). */
  cost_usd: z.number().min(0).optional(),
});
export type Usage = z.infer<typeof usageSchema>;

/**
 * The run hash's cost counter (after the usage prefixes), in nano-dollars: an integer, so that
 * Redis sums it exactly.
 */
export const COST_FIELD = 'cost_nusd';
/** Nano-dollars as US dollars. */
export const nanosToUsd = (nanos: number) => Math.round(nanos) / 1e9;

export const USAGE_FIELDS = [
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'model_calls',
  'tool_calls',
] as const;

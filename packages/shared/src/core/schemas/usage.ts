import { z } from 'zod';

/** Token and call counts, per run (`usage`) and per run tree (`usage_total`). */
export const usageSchema = z.object({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
  model_calls: z.number().int(),
  tool_calls: z.number().int(),
});
export type Usage = z.infer<typeof usageSchema>;

export const USAGE_FIELDS = [
  'prompt_tokens',
  'completion_tokens',
  'total_tokens',
  'model_calls',
  'tool_calls',
] as const;

import { z } from 'zod';

/** How much a reasoning model thinks before it answers (OpenAI's `reasoning_effort`). */
export const REASONING_EFFORTS = ['none', 'minimal', 'low', 'medium', 'high'] as const;

const penalty = z.number().min(-2).max(2);

/**
 * Sampling and output settings of a run's model calls, passed to the provider as given (OpenAI's
 * chat-completions names). `parallel_tool_calls` is sent only with tools (providers refuse it
 * without).
 */
export const modelSettingsSchema = z.strictObject({
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().min(0).max(1).optional(),
  max_tokens: z.number().int().min(1).max(10_000_000).optional(),
  reasoning_effort: z.enum(REASONING_EFFORTS).optional(),
  parallel_tool_calls: z.boolean().optional(),
  seed: z.number().int().min(Number.MIN_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER).optional(),
  stop: z.union([z.string().min(1).max(256), z.array(z.string().min(1).max(256)).min(1).max(4)]).optional(),
  presence_penalty: penalty.optional(),
  frequency_penalty: penalty.optional(),
});
export type ModelSettings = z.infer<typeof modelSettingsSchema>;

/** The settings as request fields of one model call; `withTools`: the call offers tools. */
export function modelSettingsParams(s: ModelSettings | undefined, withTools: boolean): Record<string, unknown> {
  if (!s) return {};
  const { parallel_tool_calls, ...rest } = s;
  return { ...rest, ...(withTools && parallel_tool_calls !== undefined ? { parallel_tool_calls } : {}) };
}

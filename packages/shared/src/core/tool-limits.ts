import { z } from 'zod';
import { globMatch } from './glob-match.js';
import type { ChatMessage, ToolCall } from './schemas/message.js';

/** How many entries `tool_limits` may hold. */
export const MAX_TOOL_LIMITS = 50;

/** `tool_limits`: `{"<tool name or glob>": n}`, at most n calls of the matching tools in a run. */
export const toolLimitsSchema = z
  .record(
    z
      .string()
      .min(1)
      .max(200)
      .regex(/^[A-Za-z0-9_*?.-]+$/, 'a tool name or glob: letters, digits, _ - . and the wildcards * ?'),
    z.number().int().min(0).max(100_000),
  )
  .refine((l) => Object.keys(l).length <= MAX_TOOL_LIMITS, `at most ${MAX_TOOL_LIMITS} entries`);
export type ToolLimits = z.infer<typeof toolLimitsSchema>;

/**
 * Which of a step's tool calls its run's `tool_limits` refuse: for each call, why, or undefined
 * when it may run. Each entry counts the calls of the tools it matches (a glob counts all of
 * them together); a call runs only if every entry it matches has room, and then counts in each.
 * The count is replayed over the run's transcript (its earlier steps' calls, in order) and this
 * step's calls, so that the same transcript always gives the same answer: a call refused
 * before does not count.
 */
export function toolLimitRefusals(
  limits: ToolLimits,
  transcript: readonly ChatMessage[],
  calls: readonly ToolCall[],
): Array<string | undefined> {
  const entries = Object.entries(limits).map(([pattern, max]) => ({ pattern, max, used: 0 }));
  const decide = (name: string): string | undefined => {
    const matching = entries.filter((e) => globMatch(e.pattern, name));
    const full = matching.find((e) => e.used >= e.max);
    if (full)
      return (
        `tool_limits: ${full.pattern === name ? name : `the tools matching "${full.pattern}"`} may be called at ` +
        `most ${full.max} times in this run, and ${full.max === 0 ? 'not at all' : 'that many calls were made'}; ` +
        'this call was not made: go on without it'
      );
    for (const e of matching) e.used++;
    return undefined;
  };
  for (const m of transcript) if (m.role === 'assistant') for (const tc of m.tool_calls ?? []) decide(tc.function.name);
  return calls.map((tc) => decide(tc.function.name));
}

import { describe, expect, it } from 'vitest';
import { createRunBodySchema, MAX_TOOL_ENTRY_CHARS, MAX_TOOL_GLOB_CHARS, MAX_TOOLS_ENTRIES } from './run.js';

const parse = (tools: unknown) => createRunBodySchema.safeParse({ input: 'hi', tools });
const problems = (tools: unknown) => {
  const r = parse(tools);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('the tools allowlist of a run request', () => {
  it(`takes up to ${MAX_TOOLS_ENTRIES} entries of up to ${MAX_TOOL_ENTRY_CHARS} characters`, () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `server__tool_${i}`);
    expect(problems(names(MAX_TOOLS_ENTRIES))).toEqual([]);
    expect(problems(names(MAX_TOOLS_ENTRIES + 1))).toEqual([expect.stringMatching(/^tools: /)]);
    expect(problems(['a'.repeat(MAX_TOOL_ENTRY_CHARS)])).toEqual([]);
    expect(problems(['a'.repeat(MAX_TOOL_ENTRY_CHARS + 1)])).toEqual([expect.stringMatching(/^tools\.0: /)]);
  });

  it(`lets its globs hold ${MAX_TOOL_GLOB_CHARS} characters together; exact names do not count`, () => {
    const globs = (total: number) =>
      Array.from({ length: total / 8 }, (_, i) => `s${String(i).padStart(3, '0')}__*?`.padEnd(8, '*'));
    expect(globs(MAX_TOOL_GLOB_CHARS).join('').length).toBe(MAX_TOOL_GLOB_CHARS);
    expect(problems(globs(MAX_TOOL_GLOB_CHARS))).toEqual([]);
    expect(problems([...globs(MAX_TOOL_GLOB_CHARS), 'x*'])).toEqual([
      expect.stringMatching(/^tools: the globs \(entries with \* or \?\) may hold 256 characters/),
    ]);
    const exact = Array.from({ length: 400 }, (_, i) => `server__tool_${i}`);
    expect(problems([...globs(MAX_TOOL_GLOB_CHARS), ...exact])).toEqual([]);
    // The 19-second glob of the attack review fits: the bound is on work, not on the glob's shape.
    expect(problems(['*a'.repeat(13) + '*b'])).toEqual([]);
  });
});

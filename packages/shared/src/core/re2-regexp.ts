import { RE2JS } from 're2js';

// JSON Schemas reach ajv from callers (a run's response_format) and from MCP servers (a tool's
// inputSchema), and their `pattern` and `patternProperties` are matched against what a model
// wrote, which a caller can steer. ajv compiles them with `new RegExp`, whose backtracking
// makes `^(a+)+$` against 26 `a`s and a `!` take 0.6 s (doubling with each `a`). This engine
// is RE2's, linear in the text; a pattern it cannot run (lookahead, backreferences) makes the
// schema fail to compile, which each caller of ajv already handles.

/** Something with ajv's `RegExpLike` shape: a `test`, and a `toString` ajv caches it under. */
export interface Re2Pattern {
  test(text: string): boolean;
  toString(): string;
}

/**
 * An ajv `code.regExp` engine backed by RE2 (re2js): `new Ajv({ code: { regExp: re2RegExp } })`.
 * The `u` flag ajv passes is RE2's only mode (it matches code points).
 */
export const re2RegExp = Object.assign(
  (pattern: string, flags: string): Re2Pattern => {
    const re = RE2JS.compile(pattern);
    // ajv keeps one compiled pattern per toString(): it must differ between patterns.
    return { test: (text: string) => re.test(text), toString: () => `/${pattern}/${flags}` };
  },
  // What ajv's standalone code would call; agentq does not generate standalone code.
  { code: 're2RegExp' },
);

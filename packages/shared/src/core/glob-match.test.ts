import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileGlob, globMatch } from './glob-match.js';

// The regex the matcher replaced: it defines what `*` and `?` mean, and is safe to run on the
// short strings generated here (its backtracking only hurts on long names).
function regexOracle(glob: string): (name: string) => boolean {
  const re = new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
  return (name) => re.test(name);
}

// Few distinct characters, so that random globs and names often nearly match; line breaks,
// a regex metacharacter and a surrogate pair (two UTF-16 units) among them.
const char = fc.constantFrom('a', 'b', '_', '.', '\n', '\r', '\u2028', 'é', '😀');
const glob = fc
  .array(fc.oneof(char, fc.constantFrom('*', '?', '**')), { maxLength: 10 })
  .map((parts) => parts.join(''));
const name = fc.array(char, { maxLength: 12 }).map((parts) => parts.join(''));

describe('globMatch', () => {
  it('means exactly what the regex it replaced meant, for any glob and name', () => {
    fc.assert(
      fc.property(glob, name, (g, n) => {
        expect(compileGlob(g)(n), JSON.stringify({ g, n })).toBe(regexOracle(g)(n));
      }),
      { numRuns: 20_000 },
    );
  });

  it('agrees with it on names built from the glob (the matching cases)', () => {
    // Replace each wildcard by something it may match: these pairs should mostly match.
    const filled = fc
      .tuple(glob, fc.array(fc.array(char, { maxLength: 3 }), { minLength: 20, maxLength: 20 }))
      .map(([g, fills]) => {
        let i = 0;
        const n = g.replace(/\*|\?/g, (w) => (w === '?' ? (fills[i++][0] ?? 'a') : fills[i++].join('')));
        return [g, n] as const;
      });
    let matched = 0;
    fc.assert(
      fc.property(filled, ([g, n]) => {
        const got = compileGlob(g)(n);
        if (got) matched++;
        expect(got, JSON.stringify({ g, n })).toBe(regexOracle(g)(n));
      }),
      { numRuns: 5_000 },
    );
    expect(matched).toBeGreaterThan(1_000);
  });

  it('answers a hostile glob against a long name (it took the regex 19 s at 30 characters)', () => {
    const hostile = '*a'.repeat(13) + '*b';
    expect(globMatch(hostile, 'a'.repeat(10_000))).toBe(false);
    expect(globMatch(hostile, `${'a'.repeat(10_000)}b`)).toBe(true);
    expect(globMatch(`*${'?'.repeat(100)}*b`, 'a'.repeat(10_000))).toBe(false);
  });

  it('never lets a wildcard take a line break, but a line break in the glob takes one', () => {
    expect(globMatch('a*b', 'a\nb')).toBe(false);
    expect(globMatch('a?b', 'a\u2028b')).toBe(false);
    expect(globMatch('*', 'x\ry')).toBe(false);
    expect(globMatch('a*\n*b', 'ax\nyb')).toBe(true);
    expect(globMatch('a*\n*b', 'ax\n\nyb')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { toRe2Syntax } from './re2-syntax.js';

describe('toRe2Syntax', () => {
  it('writes JavaScript \\u escapes as RE2 \\x{…}', () => {
    expect(toRe2Syntax('caf\\u00e9')).toBe('caf\\x{e9}');
    expect(toRe2Syntax('[\\u0041-\\u005A]+')).toBe('[\\x{41}-\\x{5a}]+');
    expect(toRe2Syntax('\\u{1F600}')).toBe('\\x{1f600}');
  });

  it('joins a surrogate pair written as two escapes into one code point', () => {
    expect(toRe2Syntax('\\uD83D\\uDE00!')).toBe('\\x{1f600}!');
    // A lone high surrogate is passed on for RE2 to refuse.
    expect(toRe2Syntax('\\uD83Dx')).toBe('\\x{d83d}x');
  });

  it('leaves every other escape alone, an escaped backslash included', () => {
    expect(toRe2Syntax('\\\\u0041')).toBe('\\\\u0041');
    expect(toRe2Syntax('\\d+\\.\\w \\x41 \\p{L}')).toBe('\\d+\\.\\w \\x41 \\p{L}');
    expect(toRe2Syntax('\\u12')).toBe('\\u12');
    expect(toRe2Syntax('plain')).toBe('plain');
  });
});

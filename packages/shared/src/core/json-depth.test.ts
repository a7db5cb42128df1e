import { describe, expect, it } from 'vitest';
import { nestedDeeperThan } from './json-depth.js';

describe('nestedDeeperThan', () => {
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(nestedDeeperThan('{"a":[1,{"b":2}]}', 3)).toBe(false);
    expect(nestedDeeperThan('{"a":[1,{"b":2}]}', 2)).toBe(true);
    expect(nestedDeeperThan(JSON.stringify({ s: '[[[[[[{{{{' }), 1)).toBe(false);
    expect(nestedDeeperThan(JSON.stringify({ s: 'a \\" [[[[' }), 1)).toBe(false);
  });

  it('finds 64 levels fine and 65 too deep, in a 5,000-deep body too', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(nestedDeeperThan(deep(64), 64)).toBe(false);
    expect(nestedDeeperThan(deep(65), 64)).toBe(true);
    expect(nestedDeeperThan(`{"metadata":${deep(5000)}}`, 64)).toBe(true);
  });
});

import { describe, expect, it } from 'vitest';
import { KeyShares } from './key-shares.js';

describe('KeyShares', () => {
  it('lets a key with nothing held take any amount, and one holding some up to its share', () => {
    const shares = new KeyShares(10);
    expect(shares.allows('a', 25)).toBe(true);
    const big = shares.take('a', 25);
    expect(shares.allows('a', 1)).toBe(false);
    expect(shares.allows('b', 10)).toBe(true);
    const b = shares.take('b', 6);
    expect(shares.allows('b', 4)).toBe(true);
    expect(shares.allows('b', 5)).toBe(false);
    big();
    big();
    expect(shares.of('a')).toBe(0);
    expect(shares.allows('a', 1)).toBe(true);
    b();
    expect(shares.of('b')).toBe(0);
  });
});

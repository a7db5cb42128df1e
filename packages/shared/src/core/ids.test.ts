import { describe, expect, it } from 'vitest';
import { isRunId, newId, treeTag } from './ids.js';

describe('newId', () => {
  it('makes well-formed ids that never repeat, also across refills of its random bytes', () => {
    const now = Date.now();
    // 2,000 ids draw 24,000 random bytes: several refills of the 4 KB pool.
    const ids = Array.from({ length: 2000 }, () => newId('run', now));
    expect(ids.every(isRunId)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // With one creation time, the random part alone tells them apart; the tree tags spread too.
    expect(new Set(ids.map(treeTag)).size).toBeGreaterThan(1500);
  });
});

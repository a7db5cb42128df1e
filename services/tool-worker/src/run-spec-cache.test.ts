import { describe, expect, it } from 'vitest';
import { RunSpecCache } from './run-spec-cache.js';

const held = (bytes: number, model = 'm') => ({
  createdAt: '2026-01-01T00:00:00.000Z',
  spec: {
    value: {
      model,
      max_depth: 3,
      on_budget_exhausted: 'final_answer' as const,
      metadata: {},
      ancestors: [],
      nesting: 0,
    },
    bytes,
  },
});

describe('the run spec cache', () => {
  it('holds specs up to its size by their stored size, the least recently used out first', () => {
    const cache = new RunSpecCache(100);
    cache.set('a', held(40, 'a'));
    cache.set('b', held(40, 'b'));
    expect(cache.get('a')?.spec.value.model).toBe('a');
    cache.set('c', held(40, 'c'));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.stats()).toEqual({ runs: 2, size: 80 });
    // A spec larger than the whole cache is not held, and the run's older one goes.
    cache.set('a', held(101));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.stats()).toEqual({ runs: 1, size: 40 });
    cache.delete('c');
    expect(cache.stats()).toEqual({ runs: 0, size: 0 });
  });
});

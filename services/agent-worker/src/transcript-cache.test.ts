import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '@agentq/shared/core';
import { TranscriptCache } from './transcript-cache.js';

const prefixOf = (size: number) => ({
  createdAt: '2026-01-01T00:00:00.000Z',
  messages: [{ role: 'user', content: 'x'.repeat(size) }] as ChatMessage[],
  size,
});

describe('the transcript cache', () => {
  it('holds transcripts up to its size, dropping the least recently used first', () => {
    const cache = new TranscriptCache(100);
    cache.set('a', prefixOf(40));
    cache.set('b', prefixOf(40));
    // Reading `a` makes `b` the least recently used.
    expect(cache.get('a')?.size).toBe(40);
    cache.set('c', prefixOf(40));
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')?.size).toBe(40);
    expect(cache.get('c')?.size).toBe(40);
    expect(cache.stats()).toEqual({ runs: 2, size: 80 });
  });

  it('replaces a run’s entry, counting only the new one', () => {
    const cache = new TranscriptCache(100);
    cache.set('a', prefixOf(30));
    cache.set('a', prefixOf(70));
    expect(cache.stats()).toEqual({ runs: 1, size: 70 });
    cache.delete('a');
    expect(cache.stats()).toEqual({ runs: 0, size: 0 });
    cache.delete('a');
    expect(cache.stats()).toEqual({ runs: 0, size: 0 });
  });

  it('does not hold a transcript larger than itself, and forgets the run’s older entry', () => {
    const cache = new TranscriptCache(100);
    cache.set('a', prefixOf(50));
    cache.set('b', prefixOf(20));
    cache.set('a', prefixOf(101));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.stats()).toEqual({ runs: 1, size: 20 });
  });

  it('counts a held spec with its transcript', () => {
    const cache = new TranscriptCache(100);
    const spec = {
      value: {
        model: 'm',
        max_depth: 3,
        on_budget_exhausted: 'final_answer' as const,
        metadata: {},
        ancestors: [],
        nesting: 0,
      },
      bytes: 30,
    };
    cache.set('a', { ...prefixOf(40), spec });
    expect(cache.stats()).toEqual({ runs: 1, size: 70 });
    // 70 + 40 is past 100: the least recently used goes, with its spec.
    cache.set('b', prefixOf(40));
    expect(cache.stats()).toEqual({ runs: 1, size: 40 });
    // A transcript that fits alone but not with its spec is not held.
    cache.set('c', { ...prefixOf(80), spec });
    expect(cache.get('c')).toBeUndefined();
    expect(cache.stats()).toEqual({ runs: 1, size: 40 });
  });
});

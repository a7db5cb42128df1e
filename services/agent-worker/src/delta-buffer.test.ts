import { afterEach, describe, expect, it, vi } from 'vitest';
import { DeltaBuffer } from './delta-buffer.js';

describe('DeltaBuffer', () => {
  afterEach(() => vi.useRealTimers());

  it('sends the text pushed within an interval as one event', () => {
    vi.useFakeTimers();
    const sent: string[] = [];
    const deltas = new DeltaBuffer((t) => sent.push(t), 50, 100);
    deltas.push('Hello');
    deltas.push(', world');
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(50);
    expect(sent).toEqual(['Hello, world']);
  });

  it('sends at once what reaches an event’s size, in events of at most that size, whole characters each', () => {
    const sent: string[] = [];
    const deltas = new DeltaBuffer((t) => sent.push(t), 60_000, 4);
    deltas.push('ab');
    expect(sent).toEqual([]);
    deltas.push('cdefghij');
    expect(sent).toEqual(['abcd', 'efgh', 'ij']);
    // A pair of surrogates (one character) that an event's size would cut goes whole into the next event.
    sent.length = 0;
    deltas.push('abc🙂def');
    expect(sent).toEqual(['abc', '🙂de', 'f']);
    expect(sent.join('')).toBe('abc🙂def');
  });
});

import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '@agentq/shared/store';
import { EventBacklog } from './event-backlog.js';

const event = (i: number): StoredEvent => ({
  id: `1700000000000-${i}`,
  type: 'message.delta',
  data: JSON.stringify({ run_id: 'r', at: '', depth: 0, text: `t${i}` }),
});
const events = (from: number, n: number) => Array.from({ length: n }, (_, i) => event(from + i));

describe('EventBacklog', () => {
  it('hands over what it holds in order', () => {
    const b = new EventBacklog(10);
    b.push(events(0, 3));
    b.push(events(3, 2));
    expect(b.take().map((e) => e.id)).toEqual(events(0, 5).map((e) => e.id));
    expect(b.size).toBe(0);
    expect(b.catchUp()).toBe(false);
  });

  it("holds at most `maxBytes` of events' data: past it, it is behind", () => {
    const b = new EventBacklog(1_000, 10_000);
    const big = (i: number): StoredEvent => ({
      id: `1700000000000-${i}`,
      type: 'step.completed',
      data: 'x'.repeat(4_000),
    });
    b.push([big(0), big(1)]);
    expect(b.size).toBe(2);
    expect(b.take()).toHaveLength(2);
    // What was taken no longer counts.
    b.push([big(2), big(3)]);
    expect(b.behind).toBe(false);
    b.push([big(4)]);
    expect(b.size).toBe(0);
    expect(b.behind).toBe(true);
  });

  it('holds one event alone whatever its size, but not a second beside it', () => {
    const b = new EventBacklog(1_000, 10_000);
    const huge = (i: number): StoredEvent => ({
      id: `1700000000000-${i}`,
      type: 'step.completed',
      data: 'x'.repeat(50_000),
    });
    b.push([huge(0)]);
    expect(b.size).toBe(1);
    expect(b.behind).toBe(false);
    b.push([huge(1)]);
    expect(b.behind).toBe(true);
  });

  it('a subscriber whose client does not read holds at most `max` events, however many come: then it is behind, once', () => {
    const b = new EventBacklog(200);
    for (let i = 0; i < 10_000; i += 100) b.push(events(i, 100));
    expect(b.size).toBe(0);
    expect(b.behind).toBe(true);
    expect(b.catchUp()).toBe(true);
    expect(b.catchUp()).toBe(false);
    // What comes after the catch-up began is held again.
    b.push(events(10_000, 1));
    expect(b.take().map((e) => e.id)).toEqual(['1700000000000-10000']);
  });
});

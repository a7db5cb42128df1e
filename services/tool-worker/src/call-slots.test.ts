import { describe, expect, it } from 'vitest';
import { CallSlots } from './call-slots.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('CallSlots', () => {
  it('runs at most `size` calls at once and starts waiters in order as slots free up', async () => {
    const slots = new CallSlots(2);
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    const runs = gates.map((g, i) =>
      slots.run(async () => {
        started.push(i);
        await g.promise;
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    expect(slots.busy).toBe(2);
    gates[1]!.resolve();
    await runs[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    gates[2]!.resolve();
    gates[3]!.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(started).toEqual([0, 1, 2, 3]);
    expect(slots.busy).toBe(0);
  });

  it('frees the slot of a call that throws', async () => {
    const slots = new CallSlots(1);
    await expect(
      slots.run(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(slots.busy).toBe(0);
    expect(await slots.run(async () => 'next')).toBe('next');
  });

  it('refuses a size that is not a positive integer', () => {
    expect(() => new CallSlots(0)).toThrow(/positive integer/);
  });
});

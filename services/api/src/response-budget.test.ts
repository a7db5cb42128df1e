import { describe, expect, it } from 'vitest';
import { ResponseBudget, UNCOUNTED_BELOW_BYTES } from './response-budget.js';

const MB = 1 << 20;
const settled = () => new Promise((r) => setImmediate(r));
/** `wait`, and whether it has resolved yet. */
function watched<T>(wait: Promise<T>): { done: boolean; wait: Promise<T> } {
  const w = { done: false, wait };
  w.wait = wait.then((v) => {
    w.done = true;
    return v;
  });
  return w;
}

describe('ResponseBudget.waitFor', () => {
  it('lets streams in while they fit, then in the order they asked as room is given back', async () => {
    const budget = new ResponseBudget(10 * MB);
    const signal = new AbortController().signal;
    const a = (await budget.waitFor(6 * MB, signal))!;
    const admitted: string[] = [];
    const b = budget.waitFor(6 * MB, signal).then((r) => {
      admitted.push('b');
      return r;
    });
    const c = budget.waitFor(1 * MB, signal).then((r) => {
      admitted.push('c');
      return r;
    });
    await settled();
    // c would fit beside a, but b asked first.
    expect(admitted).toEqual([]);
    expect(budget.bytesInFlight).toBe(6 * MB);
    a();
    a(); // a release counts once
    const releaseB = (await b)!;
    const releaseC = (await c)!;
    expect(admitted).toEqual(['b', 'c']);
    expect(budget.bytesInFlight).toBe(7 * MB);
    releaseB();
    releaseC();
    expect(budget.bytesInFlight).toBe(0);
  });

  it('lets one larger than the budget in alone, and never counts or holds up small writes', async () => {
    const budget = new ResponseBudget(10 * MB);
    const signal = new AbortController().signal;
    const small = (await budget.waitFor(UNCOUNTED_BELOW_BYTES - 1, signal))!;
    const huge = (await budget.waitFor(30 * MB, signal))!;
    expect(budget.bytesInFlight).toBe(30 * MB);
    expect(await budget.waitFor(100, signal)).toBeTypeOf('function');
    const after = watched(budget.waitFor(UNCOUNTED_BELOW_BYTES, signal));
    await settled();
    expect(after.done).toBe(false);
    huge();
    small();
    (await after.wait)!();
    expect(budget.bytesInFlight).toBe(0);
  });

  it('gives up the wait of a stream whose client left, and the next in line goes on', async () => {
    const budget = new ResponseBudget(10 * MB);
    const held = (await budget.waitFor(8 * MB, new AbortController().signal))!;
    const left = new AbortController();
    const gone = budget.waitFor(8 * MB, left.signal);
    const next = budget.waitFor(2 * MB, new AbortController().signal);
    left.abort();
    expect(await gone).toBeNull();
    // With the one ahead of it gone, it fits beside what is held.
    (await next)!();
    held();
    expect(budget.bytesInFlight).toBe(0);
    expect(await budget.waitFor(8 * MB, left.signal)).toBeNull();
  });
});

describe('ResponseBudget.waitForShared', () => {
  it('holds a buffer several streams write once, until the last of them lets go', async () => {
    const budget = new ResponseBudget(10 * MB);
    const signal = new AbortController().signal;
    const frame = {};
    const first = (await budget.waitForShared(frame, 6 * MB, signal))!;
    // The same buffer again: no more memory, so no wait, though 6 more would not fit.
    const second = (await budget.waitForShared(frame, 6 * MB, signal))!;
    expect(budget.bytesInFlight).toBe(6 * MB);
    first();
    first();
    expect(budget.bytesInFlight).toBe(6 * MB);
    second();
    expect(budget.bytesInFlight).toBe(0);
    // Another buffer is another hold.
    const a = (await budget.waitForShared({}, 6 * MB, signal))!;
    const b = watched(budget.waitForShared({}, 6 * MB, signal));
    await settled();
    expect(b.done).toBe(false);
    a();
    (await b.wait)!();
    expect(budget.bytesInFlight).toBe(0);
  });

  it('lets a stream whose client left stop waiting, and takes nothing once every stream has left', async () => {
    const budget = new ResponseBudget(10 * MB);
    const blocker = (await budget.waitFor(8 * MB, new AbortController().signal))!;
    const frame = {};
    const leftA = new AbortController();
    const leftB = new AbortController();
    const a = budget.waitForShared(frame, 4 * MB, leftA.signal);
    const b = budget.waitForShared(frame, 4 * MB, leftB.signal);
    leftA.abort();
    expect(await a).toBeNull();
    expect(budget.waiting).toBe(1); // b still waits, for both
    leftB.abort();
    expect(await b).toBeNull();
    expect(budget.waiting).toBe(0);
    blocker();
    await settled();
    expect(budget.bytesInFlight).toBe(0);
  });
});

describe("ResponseBudget: a tenant's share", () => {
  it(
    "a tenant's streams hold at most half of the budget: past it they wait " +
      "for that tenant's own bytes, and another tenant's stream and answers go on",
    async () => {
      const budget = new ResponseBudget(10 * MB);
      const signal = new AbortController().signal;
      const a1 = (await budget.waitFor(4 * MB, signal, 'a'))!;
      // Key a's next 2 MB would pass its share (5 MB): it waits, and holds up nobody else.
      const a2 = watched(budget.waitFor(2 * MB, signal, 'a'));
      await settled();
      expect(a2.done).toBe(false);
      const b1 = (await budget.waitFor(3 * MB, signal, 'b'))!;
      expect(budget.bytesInFlight).toBe(7 * MB);
      // A frame several streams of key b write, too.
      const b2 = (await budget.waitForShared({}, 2 * MB, signal, 'b'))!;
      expect(budget.bytesInFlight).toBe(9 * MB);
      b1();
      b2();
      await settled();
      expect(a2.done).toBe(false);
      // Key a's own bytes sent: its stream goes on.
      a1();
      (await a2.wait)!();
      expect(budget.bytesInFlight).toBe(0);
    },
  );

  it('a stream within its share still waits its turn behind a stream that waits for room', async () => {
    const budget = new ResponseBudget(10 * MB);
    const signal = new AbortController().signal;
    const a = (await budget.waitFor(4 * MB, signal, 'a'))!;
    const b = (await budget.waitFor(4 * MB, signal, 'b'))!;
    const admitted: string[] = [];
    const c = budget.waitFor(4 * MB, signal, 'c').then((r) => {
      admitted.push('c');
      return r;
    });
    const d = budget.waitFor(1 * MB, signal, 'd').then((r) => {
      admitted.push('d');
      return r;
    });
    await settled();
    // d would fit beside a and b, but c asked first and waits for room (not for its share).
    expect(admitted).toEqual([]);
    a();
    (await c)!();
    (await d)!();
    expect(admitted).toEqual(['c', 'd']);
    b();
    expect(budget.bytesInFlight).toBe(0);
  });

  it(
    "within a key, first come first served: a stream waiting for its tenant's share " +
      "is not passed by that tenant's later, smaller ones, which hold up no other key",
    async () => {
      const budget = new ResponseBudget(10 * MB);
      const signal = new AbortController().signal;
      const a1 = (await budget.waitFor(3 * MB, signal, 'a'))!;
      const big = watched(budget.waitFor(4 * MB, signal, 'a'));
      const small = watched(budget.waitFor(1 * MB, signal, 'a'));
      await settled();
      // 1 MB more would fit key a's share (5 MB), but its 4 MB asked first.
      expect([big.done, small.done]).toEqual([false, false]);
      // Neither holds up key b.
      (await budget.waitFor(4 * MB, signal, 'b'))!();
      a1();
      (await big.wait)!();
      (await small.wait)!();
      expect(budget.bytesInFlight).toBe(0);
    },
  );
});

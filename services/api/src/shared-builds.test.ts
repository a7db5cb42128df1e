import { describe, expect, it } from 'vitest';
import { SharedBuilds } from './shared-builds.js';

/** A build the test ends when it likes, counting how many were started and what each saw. */
function builds() {
  const started: Array<{ sees: number; end: () => void; fail: (e: Error) => void }> = [];
  let writes = 0;
  const build = () =>
    new Promise<unknown>((resolve, reject) => {
      const sees = writes; // what the build reads is what was written when it started
      started.push({ sees, end: () => resolve({ writes: sees }), fail: reject });
    });
  return { started, build, write: () => writes++ };
}
const tick = () => new Promise((r) => setImmediate(r));
const text = async (p: Promise<Buffer>) => JSON.parse((await p).toString()) as { writes: number };

describe('SharedBuilds.fresh (a run still going)', () => {
  it('gives every request a build that started after it came, shared by those that came during the one before', async () => {
    const shared = new SharedBuilds();
    const { started, build, write } = builds();
    const first = shared.fresh('steps', 'run_a', build);
    expect(started).toHaveLength(1);
    write(); // made before the next three ask: they must see it
    const during = [
      shared.fresh('steps', 'run_a', build),
      shared.fresh('steps', 'run_a', build),
      shared.fresh('steps', 'run_a', build),
    ];
    await tick();
    expect(started).toHaveLength(1);
    started[0].end();
    expect(await text(first)).toEqual({ writes: 0 });
    await tick();
    // One more build, for the three.
    expect(started).toHaveLength(2);
    write();
    const later = shared.fresh('steps', 'run_a', build); // came after the second started: waits for a third
    started[1].end();
    expect(await Promise.all(during.map(text))).toEqual(Array(3).fill({ writes: 1 }));
    await tick();
    expect(started).toHaveLength(3);
    started[2].end();
    expect(await text(later)).toEqual({ writes: 2 });
    // Nothing under way: the next request starts its own at once.
    void shared.fresh('steps', 'run_a', build);
    expect(started).toHaveLength(4);
    started[3].end();
  });

  it('goes on after a build that failed, and keeps runs, answers and ended runs apart', async () => {
    const shared = new SharedBuilds();
    const { started, build } = builds();
    const failing = shared.fresh('steps', 'run_a', build);
    const queued = shared.fresh('steps', 'run_a', build);
    void shared.fresh('children', 'run_a', build);
    void shared.fresh('steps', 'run_b', build);
    // An ended run's request does not join a build that started while the run was going.
    void shared.json('steps', 'run_a', build);
    expect(started).toHaveLength(4);
    started[0].fail(new Error('Redis went away'));
    await expect(failing).rejects.toThrow('Redis went away');
    await tick();
    expect(started).toHaveLength(5);
    started[4].end();
    expect(await text(queued)).toEqual({ writes: 0 });
    for (const s of started.slice(1, 4)) s.end();
  });
});

describe('SharedBuilds.json (an ended run)', () => {
  it('gives a request that comes while the answer is built that build, the same bytes', async () => {
    const shared = new SharedBuilds();
    const { started, build } = builds();
    const a = shared.json('steps', 'run_a', build);
    const b = shared.json('steps', 'run_a', build);
    expect(started).toHaveLength(1);
    started[0].end();
    expect(await a).toBe(await b);
  });
});

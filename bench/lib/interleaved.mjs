// One run at a time: systems taking turns in blocks (scenario 1 and BENCH_COMPARE), and the
// in-process loop and agentq as such systems.
import { cpuSnapshot, foreignShare } from './machine.mjs';
import { agentqOnce } from './runs.mjs';

const rotate = (b, k) => Array.from({ length: k }, (_, j) => (b + j) % k);

/**
 * Runs each system's `once()` n times, one run at a time, in `blocks` blocks per system taken in
 * the order `order(block, systems.length)` gives (rotating by default), so that the machine's
 * drift (tens of per cent on this VM) weighs on each alike.
 */
export async function interleaved({ quiet, redisProc }, systems, { n, warm, blocks, order = rotate }) {
  for (const x of systems) for (let i = 0; i < warm; i++) await x.once();
  const all = systems.flatMap((x) => x.procs);
  await quiet(all);
  const times = Object.fromEntries(systems.map((x) => [x.key, []]));
  const c0 = cpuSnapshot(all, redisProc);
  const perBlock = Math.ceil(n / blocks);
  for (let b = 0; b < blocks; b++) {
    for (const j of order(b, systems.length)) {
      const x = systems[j];
      for (let i = 0; i < perBlock && times[x.key].length < n; i++) {
        const t = performance.now();
        await x.once();
        times[x.key].push(performance.now() - t);
      }
    }
  }
  return { times, perBlock, foreignShare: foreignShare(c0, cpuSnapshot(all, redisProc)) };
}

export const inprocSystem = ({ SLOW_MS }, inproc) => ({
  key: 'inproc',
  label: 'in-process loop',
  procs: inproc.processes(),
  once: () => inproc.loop.run('benchmark', 'bench'),
  slow: () => inproc.loop.run('benchmark', `bench-${SLOW_MS}ms`),
});
export const agentqSystem = ({ waiter, SLOW_MS }, key, label, stack) => ({
  key,
  label,
  procs: stack.processes(),
  once: () => agentqOnce(waiter, stack, 'bench'),
  slow: () => agentqOnce(waiter, stack, `bench-${SLOW_MS}ms`),
});

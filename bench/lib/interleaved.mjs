// @ts-check
// One run at a time: systems taking turns in blocks (scenario 1 and BENCH_COMPARE), and the
// in-process loop and agentq as such systems.
import { cpuSnapshot, foreignShare } from './machine.mjs';
import { agentqOnce } from './runs.mjs';

/** @import { AgentqStack, RunCtx, System } from './types.d.ts' */

/** @param {number} b @param {number} k */
const rotate = (b, k) => Array.from({ length: k }, (_, j) => (b + j) % k);

/**
 * Runs each system's `once()` n times, one run at a time, in `blocks` blocks per system taken in
 * the order `order(block, systems.length)` gives (rotating by default), so that the machine's
 * drift weighs on each alike.
 * @param {Pick<RunCtx, 'quiet' | 'redisProc'>} ctx
 * @param {System[]} systems
 * @param {{ n: number, warm: number, blocks: number, order?: (block: number, k: number) => number[] }} options
 */
export async function interleaved({ quiet, redisProc }, systems, { n, warm, blocks, order = rotate }) {
  for (const x of systems) for (let i = 0; i < warm; i++) await x.once();
  const all = systems.flatMap((x) => x.procs);
  await quiet(all);
  /** @type {Record<string, number[]>} */
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

/**
 * @param {{ SLOW_MS: number }} ctx
 * @param {import('./batch.mjs').Inproc} inproc
 * @returns {System}
 */
export const inprocSystem = ({ SLOW_MS }, inproc) => ({
  key: 'inproc',
  label: 'in-process loop',
  procs: inproc.processes(),
  once: () => inproc.loop.run('benchmark', 'bench'),
  slow: () => inproc.loop.run('benchmark', `bench-${SLOW_MS}ms`),
});
/**
 * @param {{ waiter: import('ioredis').Redis, SLOW_MS: number }} ctx
 * @param {string} key
 * @param {string} label
 * @param {AgentqStack} stack
 * @returns {System}
 */
export const agentqSystem = ({ waiter, SLOW_MS }, key, label, stack) => ({
  key,
  label,
  procs: stack.processes(),
  once: () => agentqOnce(waiter, stack, 'bench'),
  slow: () => agentqOnce(waiter, stack, `bench-${SLOW_MS}ms`),
});

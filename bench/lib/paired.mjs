// @ts-check
// Two systems measured at the same time, each on a Redis of its own capped at the same share of a
// core, so that both are Redis-bound and whatever else the host does in a window slows both
// alike: one system after the other, a shared host's drift between windows is larger than the
// differences measured (docs/decisions/014-redis-bound-measured-side-by-side.md). Used by
// `npm run bench:paired` and scenario 5.
import { batch } from './batch.mjs';
import { capCpu } from './redis-cap.mjs';
import { emptyRedis } from './redis-cost.mjs';
import { startRedis } from './redis-server.mjs';
import { soloContext } from './systems.mjs';
import { STEPS } from './workload.mjs';

/**
 * @import { CappedWindow, RunCtx, Stack } from './types.d.ts'
 * @typedef {{ system: string, ctx: RunCtx & { close: () => void }, start: (ctx: RunCtx) => Promise<Stack>, windows: CappedWindow[] }} Side
 */

/**
 * A side: `system` (its name) on a Redis of its own, started by `start(ctx)`; `mcp` is the MCP
 * transport its stack uses. `windows` collects what pairedWindow measures of it.
 * @param {string} system
 * @param {Side['start']} start
 * @param {{ mcp?: 'stdio' | 'http' }} options
 * @returns {Promise<Side>}
 */
export async function pairedSide(system, start, { mcp = 'stdio' } = {}) {
  const redis = await startRedis();
  if (!redis.pid) {
    await redis.stop();
    throw new Error('a side by side measurement needs Redis servers of its own (unset BENCH_REDIS_URL)');
  }
  return { system, ctx: { ...soloContext(redis), MCP: mcp }, start, windows: [] };
}

/**
 * Ends the sides' connections and stops their Redis servers.
 * @param {Side[]} sides
 */
export async function closeSides(sides) {
  for (const s of sides) {
    s.ctx.close();
    await s.ctx.redis.stop();
  }
}

/**
 * One window: each side from an emptied Redis and a fresh stack, `runs` runs submitted at once
 * to each, every Redis capped at `cap` of a core while they run. Appends each side's window
 * (runs/s, Redis CPU a step, how busy its Redis was against the cap, the runs' statuses) to its
 * `windows` and returns them in the sides' order.
 * @param {Side[]} sides
 * @param {{ cap: number, runs: number }} options
 * @returns {Promise<CappedWindow[]>}
 */
export async function pairedWindow(sides, { cap, runs }) {
  await Promise.all(sides.map((s) => emptyRedis(s.ctx)));
  /** @type {Stack[]} */
  const stacks = [];
  try {
    for (const s of sides) stacks.push(await s.start(s.ctx));
    const results = await Promise.all(
      sides.map(async (s, i) => {
        const capped = capCpu(Number(s.ctx.redis.pid), cap);
        try {
          return await batch(s.ctx, stacks[i], runs, { label: s.system });
        } finally {
          capped.release();
        }
      }),
    );
    return results.map((r, i) => {
      const redisMs = r.cpuMs['redis-server'] ?? NaN;
      const window = {
        runsPerSec: r.runsPerSec,
        wallMs: r.wallMs,
        redisUsPerStep: (redisMs * 1000) / (runs * STEPS),
        redisBusy: redisMs / (r.wallMs * cap),
        statuses: r.statuses,
      };
      sides[i].windows.push(window);
      return window;
    });
  } finally {
    for (const stack of stacks) await stack.stop();
  }
}

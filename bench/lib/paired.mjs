// Two systems measured at the same time, each on a Redis of its own capped at the same share of a
// core, so that both are Redis-bound and whatever else the host does in a window slows both
// alike: one system after the other, a step's Redis time moves by a tenth or more from one window
// to the next on a shared host, more than the differences measured; side by side, the ratio
// between the two moves by a few per cent. Used by `npm run bench:paired` and scenario 5.
import { batch } from './batch.mjs';
import { capCpu } from './redis-cap.mjs';
import { emptyRedis } from './redis-cost.mjs';
import { startRedis } from './redis-server.mjs';
import { soloContext } from './systems.mjs';
import { STEPS } from './workload.mjs';

/**
 * A side: `system` (its name) on a Redis of its own, started by `start(ctx)`; `mcp` is the MCP
 * transport its stack uses. `windows` collects what pairedWindow measures of it.
 */
export async function pairedSide(system, start, { mcp = 'stdio' } = {}) {
  const redis = await startRedis();
  if (!redis.pid) {
    await redis.stop();
    throw new Error('a side by side measurement needs Redis servers of its own (unset BENCH_REDIS_URL)');
  }
  return { system, ctx: { ...soloContext(redis), MCP: mcp }, start, windows: [] };
}

/** Ends the sides' connections and stops their Redis servers. */
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
 */
export async function pairedWindow(sides, { cap, runs }) {
  await Promise.all(sides.map((s) => emptyRedis(s.ctx)));
  const stacks = [];
  try {
    for (const s of sides) stacks.push(await s.start(s.ctx));
    const results = await Promise.all(
      sides.map(async (s, i) => {
        const capped = capCpu(s.ctx.redis.pid, cap);
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

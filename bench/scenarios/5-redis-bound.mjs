// @ts-check
// Scenario 5, Redis-bound throughput: each system on a Redis capped at a share of one core (a
// cgroup CPU quota), so that Redis, not the 2 cores the workers share, limits it: how a Redis
// shard that serves many worker hosts is loaded. Runs/s then measure how many steps a unit of
// Redis CPU carries for each system, at saturation (commands batched as a busy Redis batches
// them). agentq is measured side by side with each baseline in turn (bench/lib/paired.mjs), so
// that whatever else the host does slows both alike
// (docs/decisions/014-redis-bound-measured-side-by-side.md).
import { capCpu } from '../lib/redis-cap.mjs';
import { closeSides, pairedSide, pairedWindow } from '../lib/paired.mjs';
import { systemStarts } from '../lib/systems.mjs';

/** Each Redis's share of one core (BENCH_REDIS_CAP): low enough that both systems of a pair wait on their Redis while their workers share the host. */
const DEFAULT_CAP = 0.12;

/**
 * @param {import('../lib/types.d.ts').Ctx} ctx
 * @returns {Promise<import('../lib/types.d.ts').RedisBoundResults>}
 */
export async function scenarioRedisBound(ctx) {
  const { log, N, QUICK, redis, MCP } = ctx;
  const cap = Number(process.env.BENCH_REDIS_CAP) || DEFAULT_CAP;
  if (!redis.pid)
    return { skipped: 'BENCH_REDIS_URL: not a Redis of the benchmark’s own, whose CPU it can cap', cap, runs: 0 };
  try {
    capCpu(redis.pid, cap).release();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    log(`5. Redis-bound throughput: skipped (${why})`);
    return { skipped: why, cap, runs: 0 };
  }
  const n = N.redisBound;
  const windows = QUICK ? 1 : 3;
  log(
    `5. Redis-bound throughput: each system on a Redis capped at ${(cap * 100).toFixed(0)} % of a core, ${n} runs submitted at once, 0 ms model; agentq side by side with each baseline, ${windows} window(s) each`,
  );
  /** @type {Required<import('../lib/types.d.ts').RedisBoundResults>['pairs']} */
  const pairs = { loop: [], bare: [] };
  /** @param {'agentq' | 'loop' | 'bare'} kind */
  const start = (kind) => (/** @type {import('../lib/types.d.ts').RunCtx} */ c) => systemStarts(c)[kind]();
  for (const other of /** @type {const} */ (['loop', 'bare'])) {
    /** @type {import('../lib/paired.mjs').Side[]} */
    const sides = [];
    try {
      sides.push(
        await pairedSide('agentq', start('agentq'), { mcp: MCP }),
        await pairedSide(other, start(other), { mcp: MCP }),
      );
      for (let w = 0; w < windows; w++) {
        const [a, o] = await pairedWindow(sides, { cap, runs: n });
        if (other === 'loop') pairs.loop.push({ agentq: a, loop: o });
        else pairs.bare.push({ agentq: a, bare: o });
        /** @param {string} kind @param {import('../lib/types.d.ts').CappedWindow} x */
        const say = (kind, x) =>
          `${kind} ${x.runsPerSec.toFixed(1)} runs/s, Redis ${x.redisUsPerStep.toFixed(0)} µs a step, busy ${(x.redisBusy * 100).toFixed(0)} %`;
        log(`  ${say('agentq', a)}; ${say(other, o)}: ${(a.runsPerSec / o.runsPerSec).toFixed(2)}×`);
      }
    } finally {
      await closeSides(sides);
    }
  }
  return { cap, runs: n, method: 'side by side', pairs };
}

// Scenario 5, Redis-bound throughput: Redis capped at a share of one core (a cgroup CPU quota),
// so that Redis, not the 2 cores the workers share, limits each system: how a Redis shard that
// serves many worker hosts is loaded. Runs/s then measure how many steps a unit of Redis CPU
// carries for each system, at saturation (commands batched as a busy Redis batches them).
import { batch } from '../lib/batch.mjs';
import { capCpu } from '../lib/redis-cap.mjs';
import { emptyRedis } from '../lib/redis-cost.mjs';
import { systemStarts, TWICE } from '../lib/systems.mjs';
import { STEPS } from '../lib/workload.mjs';

/** Redis's share of one core (BENCH_REDIS_CAP): low enough that every system here waits on it. */
const DEFAULT_CAP = 0.2;

export async function scenarioRedisBound(ctx) {
  const { log, N, redis } = ctx;
  const cap = Number(process.env.BENCH_REDIS_CAP) || DEFAULT_CAP;
  if (!redis.pid) return { skipped: 'BENCH_REDIS_URL: not a Redis of the benchmark’s own, whose CPU it can cap' };
  try {
    capCpu(redis.pid, cap).release();
  } catch (err) {
    log(`5. Redis-bound throughput: skipped (${err.message})`);
    return { skipped: err.message };
  }
  const n = N.redisBound;
  log(`5. Redis-bound throughput: Redis capped at ${(cap * 100).toFixed(0)} % of a core, ${n} runs submitted at once, 0 ms model`);
  const starts = systemStarts(ctx);
  const out = { cap, runs: n, bare: [], loop: [], agentq: [] };
  for (const kind of TWICE) {
    await emptyRedis(ctx);
    const stack = await starts[kind]();
    let capped;
    try {
      capped = capCpu(redis.pid, cap);
      const r = await batch({ ...ctx, REPEAT: 1 }, stack, n, { label: `${kind}, Redis at ${(cap * 100).toFixed(0)} %` });
      const redisMs = r.cpuMs['redis-server'] ?? NaN;
      const window = {
        runsPerSec: r.runsPerSec,
        wallMs: r.wallMs,
        redisUsPerStep: (redisMs * 1000) / (n * STEPS),
        // Redis's CPU over the window against its cap: near 1 when Redis is what limits the system.
        redisBusy: redisMs / (r.wallMs * cap),
        statuses: r.statuses,
      };
      log(`  ${kind}: ${window.runsPerSec.toFixed(1)} runs/s, Redis ${window.redisUsPerStep.toFixed(0)} µs a step, busy ${(window.redisBusy * 100).toFixed(0)} % of its cap`);
      out[kind].push(window);
    } finally {
      capped?.release();
      await stack.stop();
    }
  }
  return out;
}

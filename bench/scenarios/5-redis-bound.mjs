// Scenario 5, Redis-bound throughput: each system on a Redis capped at a share of one core (a
// cgroup CPU quota), so that Redis, not the 2 cores the workers share, limits it: how a Redis
// shard that serves many worker hosts is loaded. Runs/s then measure how many steps a unit of
// Redis CPU carries for each system, at saturation (commands batched as a busy Redis batches
// them). agentq is measured side by side with each baseline in turn (bench/lib/paired.mjs): one
// system after another, a step's Redis time moved by a tenth or more between windows here, more
// than the differences measured; side by side, whatever else the host does slows both alike.
import { capCpu } from '../lib/redis-cap.mjs';
import { closeSides, pairedSide, pairedWindow } from '../lib/paired.mjs';
import { systemStarts } from '../lib/systems.mjs';

/** Each Redis's share of one core (BENCH_REDIS_CAP): low enough that both systems of a pair wait on their Redis while their workers share the host. */
const DEFAULT_CAP = 0.12;

export async function scenarioRedisBound(ctx) {
  const { log, N, QUICK, redis, MCP } = ctx;
  const cap = Number(process.env.BENCH_REDIS_CAP) || DEFAULT_CAP;
  if (!redis.pid) return { skipped: 'BENCH_REDIS_URL: not a Redis of the benchmark’s own, whose CPU it can cap' };
  try {
    capCpu(redis.pid, cap).release();
  } catch (err) {
    log(`5. Redis-bound throughput: skipped (${err.message})`);
    return { skipped: err.message };
  }
  const n = N.redisBound;
  const windows = QUICK ? 1 : 3;
  log(
    `5. Redis-bound throughput: each system on a Redis capped at ${(cap * 100).toFixed(0)} % of a core, ${n} runs submitted at once, 0 ms model; agentq side by side with each baseline, ${windows} window(s) each`,
  );
  const out = { cap, runs: n, method: 'side by side', pairs: { loop: [], bare: [] } };
  const start = (kind) => (c) => systemStarts(c)[kind]();
  for (const other of ['loop', 'bare']) {
    const sides = [];
    try {
      sides.push(
        await pairedSide('agentq', start('agentq'), { mcp: MCP }),
        await pairedSide(other, start(other), { mcp: MCP }),
      );
      for (let w = 0; w < windows; w++) {
        const [a, o] = await pairedWindow(sides, { cap, runs: n });
        out.pairs[other].push({ agentq: a, [other]: o });
        const say = (kind, x) =>
          `${kind} ${x.runsPerSec.toFixed(1)} runs/s, Redis ${x.redisUsPerStep.toFixed(0)} µs a step, busy ${(x.redisBusy * 100).toFixed(0)} %`;
        log(`  ${say('agentq', a)}; ${say(other, o)}: ${(a.runsPerSec / o.runsPerSec).toFixed(2)}×`);
      }
    } finally {
      await closeSides(sides);
    }
  }
  return out;
}

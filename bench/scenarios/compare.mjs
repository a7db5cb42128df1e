// @ts-check
// BENCH_COMPARE, the A/B of a code change: agentq of this checkout against another built one's,
// runs one at a time interleaved with the in-process loop, then the Redis cost of each.
import { commitOf } from '../lib/machine-info.mjs';
import { agentqSystem, inprocSystem, interleaved } from '../lib/interleaved.mjs';
import { emptyRedis, probedRedisCost } from '../lib/redis-cost.mjs';
import { startAgentq } from '../lib/start-agentq.mjs';
import { startInproc } from '../lib/start-inproc.mjs';
import { summary } from '../lib/stats.mjs';
import { ROOT, STEPS } from '../lib/workload.mjs';

/**
 * BENCH_COMPARE: agentq of this checkout ("this") against another built checkout's ("other").
 * @param {import('../lib/types.d.ts').Ctx} ctx
 * @param {string} other
 * @returns {Promise<import('../lib/types.d.ts').CompareResults>}
 */
export async function compare(ctx, other) {
  const { log, N, MCP, ctl, redis, noteForeign, COMPARE_RUNS, T0 } = ctx;
  const roots = { this: ROOT, other };
  const blocks = Math.ceil(COMPARE_RUNS / 10);
  log(
    `compare: ${COMPARE_RUNS} runs one at a time each (+${N.seqWarm} warm-up), 0 ms model, interleaved in ${blocks} blocks; then the Redis cost of each`,
  );
  const inproc = await startInproc(MCP);
  /** @type {Partial<Record<'this' | 'other', import('../lib/types.d.ts').AgentqStack>>} */
  const stacks = {};
  /** @type {Awaited<ReturnType<typeof interleaved>>} */
  let one;
  try {
    stacks.this = await startAgentq(ctl, redis.url, { root: roots.this, tag: 'this', mcpTransport: MCP });
    stacks.other = await startAgentq(ctl, redis.url, { root: roots.other, tag: 'other', mcpTransport: MCP });
    // Each block: the in-process loop, then this and other in turns (ABBA), so that each follows each as often.
    const systems = [
      inprocSystem(ctx, inproc),
      agentqSystem(ctx, 'this', 'this', stacks.this),
      agentqSystem(ctx, 'other', 'other', stacks.other),
    ];
    one = await interleaved(ctx, systems, {
      n: COMPARE_RUNS,
      warm: N.seqWarm,
      blocks,
      order: (b) => (b % 2 ? [0, 2, 1] : [0, 1, 2]),
    });
    noteForeign('compare, one at a time', one.foreignShare);
  } finally {
    for (const stack of Object.values(stacks)) await stack.stop();
    await inproc.stop();
  }
  // The Redis cost of each, twice, in the order this, other, other, this (each on an emptied Redis),
  // both measurements of a checkout kept: Redis's speed drifts from one window to the next.
  /** @type {import('../lib/types.d.ts').CompareResults['redis']} */
  const redisCost = { this: [], other: [] };
  for (const key of /** @type {const} */ (['this', 'other', 'other', 'this'])) {
    await emptyRedis(ctx);
    redisCost[key].push(
      await probedRedisCost(ctx, (probeDir) =>
        startAgentq(ctl, redis.url, { root: roots[key], tag: key, probeDir, mcpTransport: MCP }),
      ),
    );
  }
  return {
    startedAt: new Date(T0).toISOString(),
    roots,
    commits: { this: commitOf(ROOT), other: commitOf(other) },
    steps: STEPS,
    mcpTransport: MCP,
    blocks,
    perBlock: one.perBlock,
    latency: { inproc: summary(one.times.inproc), this: summary(one.times.this), other: summary(one.times.other) },
    redis: redisCost,
    times: one.times,
  };
}

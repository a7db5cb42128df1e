// @ts-check
// Scenario 2, throughput: many runs submitted at once, on 1 and 2 agent-worker processes,
// beside the in-process loop, bare BullMQ and the BullMQ loop with the same processes.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { batch, inprocBatch } from '../lib/batch.mjs';
import { emptyRedis } from '../lib/redis-cost.mjs';
import { pool } from '../lib/stats.mjs';
import { startAgentq } from '../lib/start-agentq.mjs';
import { startBare } from '../lib/start-bare.mjs';
import { startInproc } from '../lib/start-inproc.mjs';
import { ROOT } from '../lib/workload.mjs';

/**
 * @param {import('../lib/types.d.ts').Ctx} ctx
 * @returns {Promise<import('../lib/types.d.ts').ThroughputResults[]>}
 */
export async function scenarioThroughput(ctx) {
  const { log, N, MCP, ctl, redis, HTTP_CONCURRENCY, REPEAT, PROFILE } = ctx;
  log(`2. throughput: ${N.many} runs submitted at once (HTTP, ${HTTP_CONCURRENCY} connections), 0 ms model`);
  /** @type {import('../lib/types.d.ts').ThroughputResults[]} */
  const out = [];
  const loop = await startInproc(MCP);
  /** @type {import('../lib/types.d.ts').Measurement} */
  let inproc;
  try {
    await pool(20, 10, () => loop.loop.run('benchmark', 'bench'));
    inproc = await inprocBatch(ctx, loop, N.many, {
      model: 'bench',
      label: 'in-process loop, one process',
      repeat: REPEAT,
    });
  } finally {
    await loop.stop();
  }
  for (const workers of [1, 2]) {
    const procs = `${workers} agent-worker${workers > 1 ? 's' : ''}`;
    // Each system on an emptied Redis with its AOF rewritten, as in scenarios 4 and 5: one that
    // has served the systems before it is slower, which would be charged to the last one.
    await emptyRedis(ctx);
    const bare = await startBare(ctl, redis.url, { agentWorkers: workers });
    const b = await batch(ctx, bare, N.many, { label: `bare BullMQ, ${procs}` });
    await bare.stop();
    await emptyRedis(ctx);
    const qloop = await startBare(ctl, redis.url, { agentWorkers: workers, work: true, mcpTransport: MCP });
    const l = await batch(ctx, qloop, N.many, { label: `BullMQ loop, ${procs}` });
    await qloop.stop();
    const profileDir = PROFILE && workers === 1 ? join(ROOT, 'bench', 'results', 'profiles') : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    await emptyRedis(ctx);
    const stack = await startAgentq(ctl, redis.url, {
      agentWorkers: workers,
      mcpTransport: MCP,
      nodeOptions: profileDir ? `--cpu-prof --cpu-prof-dir=${profileDir}` : '',
    });
    const a = await batch(ctx, stack, N.many, { label: `agentq, ${procs}` });
    await stack.stop();
    out.push({ workers, bare: b, loop: l, agentq: a, inproc });
  }
  return out;
}

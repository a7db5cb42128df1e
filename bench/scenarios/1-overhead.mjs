// @ts-check
// Scenario 1, overhead per step: runs one at a time, 0 ms model, agentq beside the in-process
// loop, bare BullMQ flows and the BullMQ loop, interleaved; then a 500 ms model; then the unit
// costs that explain the numbers.
import { agentqSystem, inprocSystem, interleaved } from '../lib/interleaved.mjs';
import { bareClient } from '../lib/runs.mjs';
import { startAgentq } from '../lib/start-agentq.mjs';
import { startBare } from '../lib/start-bare.mjs';
import { startInproc } from '../lib/start-inproc.mjs';
import { summary } from '../lib/stats.mjs';
import { unitCosts } from '../lib/unit-costs.mjs';

/**
 * @param {import('../lib/types.d.ts').Ctx} ctx
 * @returns {Promise<import('../lib/types.d.ts').OverheadResults>}
 */
export async function scenarioOverhead(ctx) {
  const { log, N, MCP, ctl, redis, noteForeign, SLOW_MS } = ctx;
  log(
    `1. overhead per step: ${N.seq} runs one at a time each (+${N.seqWarm} warm-up), 0 ms model, the four systems interleaved in ${N.seqBlocks} blocks; MCP over ${MCP}`,
  );
  const inproc = await startInproc(MCP);
  const bare = await startBare(ctl, redis.url);
  const client = await bareClient(redis.url, bare);
  const qloop = await startBare(ctl, redis.url, { work: true, mcpTransport: MCP });
  const loopClient = await bareClient(redis.url, qloop);
  const stack = await startAgentq(ctl, redis.url, { mcpTransport: MCP });
  try {
    // Only one system works at a time; the others idle.
    /** @type {import('../lib/types.d.ts').System[]} */
    const systems = [
      inprocSystem(ctx, inproc),
      { key: 'bare', label: 'bare BullMQ flows', procs: bare.processes(), once: () => client.once() },
      {
        key: 'loop',
        label: 'BullMQ loop (no store)',
        procs: qloop.processes(),
        once: () => loopClient.once(),
        slow: () => loopClient.once(`bench-${SLOW_MS}ms`),
      },
      agentqSystem(ctx, 'agentq', 'agentq', stack),
    ];
    const {
      times,
      perBlock,
      foreignShare: share,
    } = await interleaved(ctx, systems, { n: N.seq, warm: N.seqWarm, blocks: N.seqBlocks });
    noteForeign('scenario 1, one at a time', share);
    for (const x of systems) log(`  ${x.label}: p50 ${summary(times[x.key]).p50.toFixed(1)} ms`);
    // The 500 ms model: in-process, the BullMQ loop and agentq alternate run by run.
    const slowSystems = systems.flatMap((y) => (y.slow ? [{ key: y.key, slow: y.slow }] : []));
    /** @type {Record<string, number[]>} */
    const slow = Object.fromEntries(slowSystems.map((x) => [x.key, []]));
    for (const x of slowSystems) await x.slow();
    for (let i = 0; i < N.seqSlow; i++) {
      for (const x of slowSystems) {
        const t = performance.now();
        await x.slow();
        slow[x.key].push(performance.now() - t);
      }
    }
    log(
      `  ${SLOW_MS} ms model: in-process p50 ${summary(slow.inproc).p50.toFixed(0)} ms, BullMQ loop p50 ${summary(slow.loop).p50.toFixed(0)} ms, agentq p50 ${summary(slow.agentq).p50.toFixed(0)} ms`,
    );
    const units = await unitCosts(ctx, inproc.loop);
    return {
      interleaved: { blocks: N.seqBlocks, perBlock },
      units,
      inproc: summary(times.inproc),
      bare: summary(times.bare),
      loop: summary(times.loop),
      agentq: summary(times.agentq),
      slow: { modelMs: SLOW_MS, inproc: summary(slow.inproc), loop: summary(slow.loop), agentq: summary(slow.agentq) },
    };
  } finally {
    await client.close();
    await loopClient.close();
    await bare.stop();
    await qloop.stop();
    await stack.stop();
    await inproc.stop();
  }
}

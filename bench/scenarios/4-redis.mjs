// @ts-check
// Scenario 4, Redis cost: the commands and round trips of a step, by command and by process,
// agentq beside bare BullMQ.
import { emptyRedis, probedRedisCost } from '../lib/redis-cost.mjs';
import { systemStarts, TWICE } from '../lib/systems.mjs';

/** @import { Ctx, RedisCost, RedisResults, RedisWindow, ScriptCost } from '../lib/types.d.ts' */

/**
 * @param {RedisWindow} w
 * @param {'serverCommands' | 'trips' | 'redisReads' | 'redisWrites' | 'bytesIn' | 'aofBytes'} k
 */
const perStep = (w, k) => ((w[k] ?? NaN) / w.steps).toFixed(1);

const scriptsLine = (/** @type {ScriptCost[]} */ rows) =>
  rows
    .slice(0, 14)
    .map((r) => `${r.name} ${r.callsPerStep.toFixed(2)}×${r.usecPerCall.toFixed(0)}=${r.usecPerStep.toFixed(0)} µs`)
    .join(', ');

/**
 * @param {Ctx} ctx
 * @returns {Promise<RedisResults>}
 */
export async function scenarioRedis(ctx) {
  const { log, N } = ctx;
  log(
    `4. Redis cost: ${N.redisSeq} runs one at a time, then ${N.redisBatch} at once, INFO commandstats + client probes`,
  );
  const starts = systemStarts(ctx);
  // `out` keeps each system's first window (with its slow log), `again` its second.
  /** @type {Partial<Record<'agentq' | 'bare' | 'loop', RedisCost>>} */
  const out = {};
  /** @type {Partial<Record<'agentq' | 'bare' | 'loop', RedisCost>>} */
  const again = {};
  for (const kind of TWICE) {
    await emptyRedis(ctx);
    const cost = await probedRedisCost(ctx, starts[kind]);
    if (!out[kind]) out[kind] = cost;
    else again[kind] = { sequential: cost.sequential, batch: cost.batch };
  }
  for (const [kind, { sequential: s, batch: b, scripts = [] }] of Object.entries(out)) {
    log(`  ${kind}: Redis time per step by command (slow log, ${b.runs} at once): ${scriptsLine(scripts)}`);
    log(
      `  ${kind}: ${perStep(s, 'serverCommands')} / ${perStep(b, 'serverCommands')} Redis commands per step (one at a time / at once), ${perStep(s, 'trips')} / ${perStep(b, 'trips')} round trips; Redis's read / write system calls per step, at once: ${perStep(b, 'redisReads')} / ${perStep(b, 'redisWrites')}; bytes per step in from clients / into the AOF, at once: ${perStep(b, 'bytesIn')} / ${perStep(b, 'aofBytes')}`,
    );
  }
  const { agentq, bare, loop } = out;
  if (!agentq || !bare || !loop) throw new Error('scenario 4 measured a system no time');
  for (const [kind, first] of Object.entries({ agentq, bare, loop })) {
    const second = again[/** @type {'agentq' | 'bare' | 'loop'} */ (kind)] ?? first;
    const us = (/** @type {RedisWindow} */ w) => ((w.redisCpuMs * 1000) / w.steps).toFixed(0);
    log(
      `  ${kind}: Redis CPU per step, both windows, one at a time ${us(first.sequential)} / ${us(second.sequential)} µs, ${first.batch.runs} at once ${us(first.batch)} / ${us(second.batch)} µs`,
    );
  }
  return { agentq, bare, loop, again };
}

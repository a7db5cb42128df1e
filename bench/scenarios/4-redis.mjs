// Scenario 4, Redis cost: the commands and round trips of a step, by command and by process,
// agentq beside bare BullMQ.
import { emptyRedis, probedRedisCost } from '../lib/redis-cost.mjs';
import { startAgentq } from '../lib/start-agentq.mjs';
import { startBare } from '../lib/start-bare.mjs';

const perStep = (w, k) => (w[k] / w.steps).toFixed(1);

const scriptsLine = (rows) => rows.slice(0, 14).map((r) => `${r.name} ${r.callsPerStep.toFixed(2)}×${r.usecPerCall.toFixed(0)}=${r.usecPerStep.toFixed(0)} µs`).join(', ');

export async function scenarioRedis(ctx) {
  const { log, N, MCP, ctl, redis } = ctx;
  log(`4. Redis cost: ${N.redisSeq} runs one at a time, then ${N.redisBatch} at once, INFO commandstats + client probes`);
  const out = {};
  await emptyRedis(ctx);
  out.bare = await probedRedisCost(ctx, (probeDir) => startBare(ctl, redis.url, { probeDir }));
  // The same flows making the same model and MCP calls, no store: what real work does to a queue's cost.
  await emptyRedis(ctx);
  out.loop = await probedRedisCost(ctx, (probeDir) => startBare(ctl, redis.url, { probeDir, work: true, mcpTransport: MCP }));
  await emptyRedis(ctx);
  out.agentq = await probedRedisCost(ctx, (probeDir) => startAgentq(ctl, redis.url, { probeDir, mcpTransport: MCP }));
  for (const [kind, { sequential: s, batch: b }] of Object.entries(out)) {
    log(`  ${kind}: Redis time per step by command (slow log, ${b.runs} at once): ${scriptsLine(out[kind].scripts)}`);
    log(`  ${kind}: ${perStep(s, 'serverCommands')} / ${perStep(b, 'serverCommands')} Redis commands per step (one at a time / at once), ${perStep(s, 'trips')} / ${perStep(b, 'trips')} round trips; Redis's read / write system calls per step, at once: ${perStep(b, 'redisReads')} / ${perStep(b, 'redisWrites')}`);
  }
  return out;
}

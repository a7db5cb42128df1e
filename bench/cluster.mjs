#!/usr/bin/env node
// @ts-check
// `npm run bench:cluster`: agentq on a Redis Cluster of its own (3 masters, loopback, AOF on as
// in docker-compose.yml), as built processes; stops by itself.
//
//   1. 1 cell vs 3 cells: RUNS runs of the benchmark's workload (3 rounds × 3 tool calls, 0 ms
//      model) submitted at once: throughput, and per shard the Redis CPU (INFO cpu) and the
//      commands (INFO commandstats) of each model step: how evenly the cells spread the work;
//      round trips per step: sent by the processes (the Redis probe) and reaching each shard
//      (its read system calls, /proc/<pid>/io);
//   2. CONCURRENT runs at once with a 2 s model step, on 3 cells: finish time against the ideal
//      (the submission, then 4 steps × 2 s), Redis memory per run in flight and kept after;
//   3. a projection from the measured per-step cost: steps/s one shard serves, shards for
//      10,000 concurrent runs with a 2 s model step, memory for them.
//
// Two cores cannot show shards scaling (every process shares them), hence the projection.
// Prints a table and writes bench/results/cluster.json. Env: BENCH_RUNS (1000),
// BENCH_CONCURRENT (10000), BENCH_QUICK=1 (200 and 1000).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { syscalls } from './lib/machine.mjs';
import { readProbes } from './lib/redis-cost.mjs';
import { startRedisCluster } from './lib/redis-cluster.mjs';
import { startAgentq } from './lib/start-agentq.mjs';
import { sleep, until } from './lib/procs.mjs';
import { submitAgentqRun } from './lib/runs.mjs';
import { pool, quantile, textTable } from './lib/stats.mjs';
import { ROOT, shared, STEPS } from './lib/workload.mjs';

/**
 * @import { AgentqStack } from './lib/types.d.ts'
 * @typedef {Awaited<ReturnType<typeof startRedisCluster>>} Cluster
 * @typedef {{ port: number, cpuUs: number, calls: number, memory: number, reads: number, writes: number }} NodeStat
 * @typedef {{
 *   wallMs: number, runsPerSec: number, redisCpuUsPerStep: number, commandsPerStep: number, clientTripsPerStep: number,
 *   shards: Array<{ port: number, cpuShare: number, cpuUsPerStep: number, commandsPerStep: number, readsPerStep: number, writesPerStep: number }>,
 * }} Throughput
 * @typedef {{
 *   wallMs: number, submittedMs: number, idealMs: number, vsIdeal: number, completed: number,
 *   runMs: { p50: number, p99: number, ideal: number }, peakActive: number,
 *   peakMemoryPerActiveRun: number | null, keptMemoryPerRun: number,
 * }} Concurrent
 */

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const RUNS = Number(process.env.BENCH_RUNS) || (QUICK ? 200 : 1000);
const CONCURRENT = Number(process.env.BENCH_CONCURRENT) || (QUICK ? 1000 : 10_000);
const MODEL_STEP_MS = 2000;
const log = (/** @type {string} */ s) =>
  process.stdout.write(`[${String(Math.round(process.uptime())).padStart(4)} s] ${s}\n`);

/**
 * Per node: Redis CPU (µs), commands run and memory used, from INFO.
 * @param {Cluster} cluster
 * @returns {Promise<NodeStat[]>}
 */
async function nodeStats(cluster) {
  return Promise.all(
    cluster.nodes.map(async (n) => {
      const info = await n.redis.info('everything');
      const num = (/** @type {string} */ k) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
      let calls = 0;
      for (const m of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(m[1]);
      // Its read system calls: the round trips that reached it (one read takes all that arrived together).
      const io = syscalls(n.pid) ?? { reads: 0, writes: 0 };
      return {
        port: n.port,
        cpuUs: (num('used_cpu_sys') + num('used_cpu_user')) * 1e6,
        calls,
        memory: num('used_memory'),
        reads: io.reads,
        writes: io.writes,
      };
    }),
  );
}
/** @param {NodeStat[]} a @param {NodeStat[]} b */
const delta = (a, b) =>
  a.map((x, i) => ({
    port: x.port,
    cpuUs: b[i].cpuUs - x.cpuUs,
    calls: b[i].calls - x.calls,
    memory: b[i].memory - x.memory,
    reads: b[i].reads - x.reads,
    writes: b[i].writes - x.writes,
  }));

/**
 * Round trips the stack's processes sent (their Redis probes), all processes together.
 * @param {AgentqStack} stack
 * @param {string} probeDir
 */
async function clientTrips(stack, probeDir) {
  const probes = await readProbes(probeDir, stack.servicePids());
  return Object.values(probes).reduce((a, p) => a + p.trips, 0);
}

/**
 * Waits until the tenant has nothing running or in line (every submitted run has ended).
 * @param {AgentqStack} stack
 * @param {number} timeoutMs
 * @param {(usage: { active_runs: number, queued_runs: number }) => void} onPoll
 */
async function drained(stack, timeoutMs, onPoll = () => {}) {
  await until(
    'every run to end',
    async () => {
      const u = /** @type {{ active_runs: number, queued_runs: number }} */ (
        await (await fetch(`${stack.apiUrl}/v1/usage`)).json()
      );
      onPoll(u);
      return u.active_runs === 0 && u.queued_runs === 0;
    },
    timeoutMs,
    200,
  );
}

/**
 * Every run's time from creation to its end, from the API's list (newest first, 100 a page).
 * @param {AgentqStack} stack
 * @param {number} n
 */
async function runDurations(stack, n) {
  /** @type {Array<{ status: string, ms: number }>} */
  const out = [];
  let after = '';
  while (out.length < n) {
    const page =
      /** @type {{ data: Array<{ status: string, created_at: string, completed_at: string }>, next: string | null }} */ (
        await (await fetch(`${stack.apiUrl}/v1/runs?limit=100${after}`)).json()
      );
    for (const r of page.data)
      out.push({ status: r.status, ms: Date.parse(r.completed_at) - Date.parse(r.created_at) });
    if (!page.next) break;
    after = `&after=${page.next}`;
  }
  return out;
}

const cluster = await startRedisCluster({ masters: 3 });
const ctl = shared.createRedis(cluster.url, { name: 'bench-cluster-ctl' });
/** @type {Record<number, Throughput>} */
const throughput = {};
/** @type {Concurrent | undefined} */
let concurrent;
try {
  for (const cells of [1, 3]) {
    log(`1. ${cells} cell${cells > 1 ? 's' : ''} on ${cluster.nodes.length} shards: ${RUNS} runs at once, 0 ms model`);
    const probeDir = mkdtempSync(join(tmpdir(), 'agentq-bench-probe-'));
    const stack = await startAgentq(ctl, cluster.url, { tag: `c${cells}`, cells, deleteKeys: false, probeDir });
    try {
      await pool(20, 10, () => submitAgentqRun(stack, 'bench'));
      await drained(stack, 60_000);
      const s0 = await nodeStats(cluster);
      const trips0 = await clientTrips(stack, probeDir);
      const t0 = Date.now();
      await pool(RUNS, 50, () => submitAgentqRun(stack, 'bench'));
      await drained(stack, 300_000);
      const wallMs = Date.now() - t0;
      const d = delta(s0, await nodeStats(cluster));
      const trips = (await clientTrips(stack, probeDir)) - trips0;
      const steps = RUNS * STEPS;
      const cpuTotal = d.reduce((a, x) => a + x.cpuUs, 0);
      throughput[cells] = {
        wallMs,
        runsPerSec: (RUNS / wallMs) * 1000,
        redisCpuUsPerStep: cpuTotal / steps,
        commandsPerStep: d.reduce((a, x) => a + x.calls, 0) / steps,
        clientTripsPerStep: trips / steps,
        shards: d.map((x) => ({
          port: x.port,
          cpuShare: x.cpuUs / cpuTotal,
          cpuUsPerStep: x.cpuUs / steps,
          commandsPerStep: x.calls / steps,
          readsPerStep: x.reads / steps,
          writesPerStep: x.writes / steps,
        })),
      };
      const t = throughput[cells];
      log(
        `   ${t.runsPerSec.toFixed(1)} runs/s; Redis CPU ${t.redisCpuUsPerStep.toFixed(0)} µs per step, shares ${t.shards.map((s) => `${(s.cpuShare * 100).toFixed(0)} %`).join(' / ')}`,
      );
    } finally {
      await stack.stop();
      rmSync(probeDir, { recursive: true, force: true });
    }
  }

  log(`2. ${CONCURRENT} runs at once with a ${MODEL_STEP_MS} ms model step, 3 cells`);
  // The heap the services ship with is too small for thousands of model steps in flight in one
  // agent-worker (docs/operating.md#memory): this scenario gives the agent-workers 1.5 GB.
  const stack = await startAgentq(ctl, cluster.url, {
    tag: 'conc',
    cells: 3,
    agentWorkers: 2,
    agentConcurrency: Math.ceil(CONCURRENT / 2),
    toolConcurrency: 2000,
    deleteKeys: false,
    nodeOptions: '--max-semi-space-size=8 --max-old-space-size=1536',
  });
  try {
    const s0 = await nodeStats(cluster);
    let peak = { active: 0, memory: 0 };
    const sample = setInterval(async () => {
      const mem = (await nodeStats(cluster)).reduce((a, x, i) => a + x.memory - s0[i].memory, 0);
      if (mem > peak.memory) peak = { ...peak, memory: mem };
    }, 500);
    const t0 = Date.now();
    await pool(CONCURRENT, 100, () => submitAgentqRun(stack, `bench-${MODEL_STEP_MS}ms`));
    const submittedMs = Date.now() - t0;
    await drained(stack, 600_000, (u) => (peak.active = Math.max(peak.active, u.active_runs)));
    const wallMs = Date.now() - t0;
    clearInterval(sample);
    await sleep(600);
    const after = await nodeStats(cluster);
    const kept = after.reduce((a, x, i) => a + x.memory - s0[i].memory, 0);
    const durations = await runDurations(stack, CONCURRENT);
    const ms = durations.map((r) => r.ms);
    const ideal = submittedMs + STEPS * MODEL_STEP_MS;
    concurrent = {
      wallMs,
      submittedMs,
      idealMs: ideal,
      vsIdeal: wallMs / ideal,
      completed: durations.filter((r) => r.status === 'completed').length,
      runMs: { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), ideal: STEPS * MODEL_STEP_MS },
      peakActive: peak.active,
      peakMemoryPerActiveRun: peak.active ? peak.memory / peak.active : null,
      keptMemoryPerRun: kept / CONCURRENT,
    };
    const c = concurrent;
    log(
      `   all ended in ${(wallMs / 1000).toFixed(1)} s (submission ${(submittedMs / 1000).toFixed(1)} s; ideal ${(ideal / 1000).toFixed(1)} s); a run p50 ${c.runMs.p50} ms against ${c.runMs.ideal} ms`,
    );
  } finally {
    await stack.stop();
  }
} finally {
  ctl.disconnect();
  await cluster.stop();
}

// The projection: a step's Redis CPU lands on the shard of its cell (queues) and its run tree,
// so with runs spread over cells a cluster serves about shards × 1e6 / (µs per step) steps/s.
if (!concurrent || !throughput[1] || !throughput[3]) throw new Error('bench:cluster did not measure everything');
const perStep = throughput[3].redisCpuUsPerStep;
const stepsPerSecPerShard = 1e6 / perStep;
const neededStepsPerSec = 10_000 / (MODEL_STEP_MS / 1000);
const headroom = 0.7; // a shard kept below 70 % of its core
const projection = {
  redisCpuUsPerStep: perStep,
  stepsPerSecPerShard,
  stepsPerSecFor10k: neededStepsPerSec,
  shardsFor10k: Math.ceil((neededStepsPerSec * perStep) / (1e6 * headroom)),
  memoryFor10kMB: ((concurrent.peakMemoryPerActiveRun ?? concurrent.keptMemoryPerRun) * 10_000) / 1e6,
};
const t1 = throughput[1];
const t3 = throughput[3];
const c = concurrent;
const p = projection;
/** @param {Throughput} t @param {'readsPerStep' | 'writesPerStep'} k */
const perShard = (t, k) => t.shards.map((s) => s[k].toFixed(1)).join(' / ');
const shares = (/** @type {Throughput} */ t) => t.shards.map((s) => `${(s.cpuShare * 100).toFixed(0)} %`).join(' / ');
process.stdout.write(
  `\n${textTable(
    ['measure', '1 cell', '3 cells'],
    [
      [
        `throughput, ${RUNS} runs at once, 0 ms model`,
        `${t1.runsPerSec.toFixed(1)} runs/s`,
        `${t3.runsPerSec.toFixed(1)} runs/s`,
      ],
      [
        'Redis CPU per step, all shards',
        `${t1.redisCpuUsPerStep.toFixed(0)} µs`,
        `${t3.redisCpuUsPerStep.toFixed(0)} µs`,
      ],
      ['  share of each shard', shares(t1), shares(t3)],
      ['Redis commands per step (incl. inside Lua)', t1.commandsPerStep.toFixed(0), t3.commandsPerStep.toFixed(0)],
      [
        '  per shard',
        t1.shards.map((s) => s.commandsPerStep.toFixed(0)).join(' / '),
        t3.shards.map((s) => s.commandsPerStep.toFixed(0)).join(' / '),
      ],
      [
        'round trips per step, sent by all processes',
        t1.clientTripsPerStep.toFixed(1),
        t3.clientTripsPerStep.toFixed(1),
      ],
      ['  reaching each shard (its read system calls)', perShard(t1, 'readsPerStep'), perShard(t3, 'readsPerStep')],
      [
        '  replies written by each shard (write system calls)',
        perShard(t1, 'writesPerStep'),
        perShard(t3, 'writesPerStep'),
      ],
    ],
  )}\n\n${textTable(
    ['measure', 'value'],
    [
      [
        `${CONCURRENT} runs at once, ${MODEL_STEP_MS} ms model step, 3 cells: all ended in`,
        `${(c.wallMs / 1000).toFixed(1)} s against an ideal ${(c.idealMs / 1000).toFixed(1)} s (${c.vsIdeal.toFixed(2)}×; submission took ${(c.submittedMs / 1000).toFixed(1)} s)`,
      ],
      ['  one run, p50 / p99', `${c.runMs.p50} / ${c.runMs.p99} ms against ${c.runMs.ideal} ms`],
      ['  completed', `${c.completed} of ${CONCURRENT}; at most ${c.peakActive} active at once`],
      [
        '  Redis memory per run in flight (peak) / kept after',
        `${c.peakMemoryPerActiveRun ? (c.peakMemoryPerActiveRun / 1024).toFixed(1) : '–'} KB / ${(c.keptMemoryPerRun / 1024).toFixed(1)} KB`,
      ],
      [
        'projection: steps/s one shard serves (a core at 100 %)',
        `${Math.round(p.stepsPerSecPerShard)} (${perStep.toFixed(0)} µs of Redis CPU a step)`,
      ],
      [
        `  10,000 concurrent runs, ${MODEL_STEP_MS} ms step: steps/s, shards at ≤ 70 %`,
        `${p.stepsPerSecFor10k} steps/s → ${p.shardsFor10k} shard${p.shardsFor10k > 1 ? 's' : ''}`,
      ],
      ['  Redis memory for them', `${p.memoryFor10kMB.toFixed(0)} MB`],
    ],
  )}\n`,
);
mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench', 'results', 'cluster.json'),
  `${JSON.stringify({ at: new Date().toISOString(), runs: RUNS, shards: t1.shards.length, throughput, concurrent, projection }, null, 2)}\n`,
);

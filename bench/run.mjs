#!/usr/bin/env node
// `npm run bench`: what durability costs agentq, how much it does per second, and whether it
// scales. Runs everything on this machine, on loopback only, and stops by itself:
//
//   1. overhead per step: runs of 3 rounds × 3 parallel tool calls, 0 ms model, one at a time,
//      beside (a) the same loop in one process and (b) bare BullMQ flows of the same shape, and
//      (c) the BullMQ loop: those flows doing the model and MCP calls, with no store;
//      then the same with a 500 ms model (what durability adds to a real model step)
//   2. throughput: 1,000 such runs submitted at once, 1 and 2 agent-worker processes, beside
//      bare BullMQ and the BullMQ loop with the same processes
//   3. realistic latency: 1,000 (and 100) concurrent runs with a 500 ms model: wall time
//      against the ideal, peak RSS of each process; scale-out: 200 such runs with 50 model-step
//      slots per agent-worker, on 1 and on 2 agent-workers
//   4. Redis cost: commands and round trips per step, by command, beside bare BullMQ
//
// Prints a table and writes BENCHMARKS.md, bench/results/latest.json and
// bench/results/chart.svg. Needs `npm run build` first (npm run bench does it) and
// redis-server on the PATH (it starts its own, on a free port, AOF on as in
// docker-compose.yml; BENCH_REDIS_URL uses another instead, keys under a unique prefix).
//
// Env: BENCH_QUICK=1 (a smoke version, ≈ 1 minute; writes bench/results/quick.json only),
// BENCH_MCP=stdio|http (how the no-op MCP server is reached; default stdio),
// BENCH_ONLY=1,3 (some scenarios only; does not write BENCHMARKS.md),
// BENCH_RUNS=1000 (runs in scenarios 2 and 3; with BENCH_COMPARE, runs of each checkout, 600),
// BENCH_PROFILE=1 (CPU profiles of the services during scenario 2 with one agent-worker, into
// bench/results/profiles; summarise one with `node bench/profile-summary.mjs <file>`), BENCH_NODE_OPTIONS (extra NODE_OPTIONS for the
// agentq services, which otherwise get the heap flags they ship with (scripts/lib/services.mjs),
// e.g. "--max-old-space-size=512" to size the heap differently; does not write BENCHMARKS.md),
// BENCH_REPORT_ONLY=1 (no measuring: render BENCHMARKS.md and the chart again from
// bench/results/latest.json, e.g. after editing bench/findings.md),
// BENCH_COMPARE=<path of another built checkout of agentq> (A/B of a code change: only
// scenario 1's one-at-a-time 0 ms runs, this checkout's agentq and the other's interleaved in
// blocks of 10 runs with the in-process loop, then scenario 4's Redis commands and round trips of
// each, on one Redis; prints a table with the ratios and the spread of the blocks' ratios, writes
// bench/results/compare.json, not BENCHMARKS.md; BENCH_QUICK=1 makes it shorter).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import {
  agentqOnce,
  agentqRunTimes,
  bareClient,
  bareRunTimes,
  commandStats,
  cpuDelta,
  cpuSnapshot,
  FANOUT,
  foreignShare,
  waitQuiet,
  memory,
  readProbes,
  ROOT,
  ROUNDS,
  startAgentq,
  startBare,
  startMcp,
  startModel,
  startRedis,
  submitAgentqRun,
  TOOL_CALLS,
  STEPS,
  waitCompleted,
} from './lib/harness.mjs';
import { startInProcessLoop } from './lib/inprocess-loop.mjs';
import { sleep, stopProc, tmpDir } from './lib/procs.mjs';
import { HEAP_FLAGS } from '../scripts/lib/services.mjs';
import { commitOf, machineInfo } from './lib/machine-info.mjs';
import { compareText, report } from './lib/report.mjs';
import { pool, summary } from './lib/stats.mjs';

const truthy = (v) => /^(1|true|yes|on)$/i.test(v ?? '');
const QUICK = truthy(process.env.BENCH_QUICK);
const MCP = process.env.BENCH_MCP === 'http' ? 'http' : 'stdio';
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
const PROFILE = truthy(process.env.BENCH_PROFILE);
const COMPARE = process.env.BENCH_COMPARE ? resolve(process.env.BENCH_COMPARE) : null;
const MANY = Number(process.env.BENCH_RUNS) || (QUICK ? 100 : 1000);
/** Runs of each checkout under BENCH_COMPARE, in blocks of 10: 200 leave a p50 ratio uncertain by ≈ ±5 % here. */
const COMPARE_RUNS = Number(process.env.BENCH_RUNS) || (QUICK ? 40 : 600);
const SLOW_MS = 500;
/** Model-step slots per agent-worker (AGENT_CONCURRENCY) in the scale-out measurement. */
const SCALE_SLOTS = 50;
const N = {
  seq: QUICK ? 30 : 200,
  seqWarm: QUICK ? 5 : 20,
  seqSlow: QUICK ? 2 : 10,
  seqBlocks: QUICK ? 3 : 8,
  many: MANY,
  few: Math.min(100, MANY),
  scaleOut: QUICK ? 100 : 200,
  redisSeq: QUICK ? 10 : 50,
  redisBatch: QUICK ? 50 : 200,
};
const HTTP_CONCURRENCY = 64;
/** Repetitions of each many-runs measurement (the fastest is kept). */
const REPEAT = QUICK ? 1 : 2;

if (truthy(process.env.BENCH_REPORT_ONLY)) {
  // Renders BENCHMARKS.md and the chart again from the last full run (after editing bench/findings.md).
  const latest = JSON.parse(readFileSync(join(ROOT, 'bench', 'results', 'latest.json'), 'utf8'));
  const { files } = report(latest, { write: true });
  process.stdout.write(`bench: wrote ${files.map((f) => f.replace(`${ROOT}/`, '')).join(', ')} from bench/results/latest.json\n`);
  process.exit(0);
}

const built = (root) => ['api', 'agent-worker', 'tool-worker'].map((s) => join(root, 'services', s, 'dist', 'main.js')).concat(join(root, 'packages/shared/dist/index.js'));
const missing = [...built(ROOT), join(ROOT, 'packages/scripted-llm/dist/index.js'), ...(COMPARE ? built(COMPARE) : [])].filter((f) => !existsSync(f));
if (missing.length) {
  process.stderr.write(`bench: ${missing.join(', ')} missing: run npm run build first (npm run bench does it)\n`);
  process.exit(1);
}

const T0 = Date.now();
const say = (s = '') => process.stdout.write(`${s}\n`);
const log = (s) => say(`[${((Date.now() - T0) / 1000).toFixed(0).padStart(3)} s] ${s}`);
const want = (n) => !ONLY || ONLY.has(String(n));

const redis = await startRedis();
const ctl = new Redis(redis.url, { maxRetriesPerRequest: null, connectionName: 'bench-ctl' });
const waiter = new Redis(redis.url, { maxRetriesPerRequest: null, connectionName: 'bench-wait' });
const redisProc = redis.pid ? [{ name: 'redis-server', pid: redis.pid }] : [];

/** The share of the machine other processes used during each measurement, to judge the numbers by. */
const foreign = [];
const noteForeign = (label, share) => {
  foreign.push({ label, share });
  if (share > 0.1) log(`  warning: other processes used ${(share * 100).toFixed(0)} % of the machine during "${label}"`);
};
// At most 30 s of waiting for a quiet machine before a measurement, 3 minutes in all.
let quietBudgetMs = 180_000;
const quiet = async (processes = []) => {
  const t = Date.now();
  const share = await waitQuiet([...processes, ...redisProc], { maxMs: Math.max(0, Math.min(30_000, quietBudgetMs)) });
  quietBudgetMs -= Date.now() - t;
  if (share >= 0.1) log(`  (the machine did not go quiet: other processes use ${(share * 100).toFixed(0)} % of it; measuring anyway)`);
};

/** How runs are submitted to a stack and timed afterwards: agentq's through its API, bare flows by adding their first job. */
async function submitter(stack, model = 'bench') {
  if (stack.kind === 'agentq') return { submit: () => submitAgentqRun(stack, model), times: (ids) => agentqRunTimes(ctl, stack.prefix, ids), close: async () => {} };
  const client = await bareClient(redis.url, stack);
  return {
    submit: async () => {
      const id = client.newId();
      await client.add(id);
      return id;
    },
    times: (ids) => bareRunTimes(ctl, stack.prefix, ids),
    close: () => client.close(),
  };
}

/** The fastest of repeated measurements (interference from other processes only ever slows a run down), with every one's figures. */
const bestOf = (all) => ({
  ...all.reduce((a, b) => (b.runsPerSec > a.runsPerSec ? b : a)),
  repetitions: all.map((r) => ({ runsPerSec: r.runsPerSec, wallMs: r.wallMs, p50: r.latency.p50, p99: r.latency.p99, foreignShare: r.foreignShare })),
});
const nth = (label, i, repeat) => (repeat > 1 ? `${label} (#${i + 1})` : label);

/** n runs submitted at once, REPEAT times on the same processes; per-run times from what the system stored. */
async function batch(stack, n, { label, model }) {
  const { submit, times, close } = await submitter(stack, model);
  try {
    // Warm up (JIT, connections), then measure from the first submission to the last completion.
    const warm = Math.min(20, n);
    const before = await ctl.zcard(stack.completedKey);
    await pool(warm, 10, submit);
    await waitCompleted(ctl, stack, before + warm * STEPS, { timeoutMs: 60_000 });
    const all = [];
    for (let i = 0; i < REPEAT; i++) all.push(await batchOnce(stack, n, { submit, times, label: nth(label, i, REPEAT) }));
    return { ...bestOf(all), label };
  } finally {
    await close();
  }
}

async function batchOnce(stack, n, { submit, times, label }) {
  await quiet(stack.processes());
  const before = await ctl.zcard(stack.completedKey);
  const cpu0 = cpuSnapshot(stack.processes(), redisProc);
  const t0 = Date.now();
  const ids = await pool(n, HTTP_CONCURRENCY, submit);
  const submitMs = Date.now() - t0;
  await waitCompleted(ctl, stack, before + n * STEPS, {
    timeoutMs: Math.max(120_000, n * 300),
    stalled: async () => (await times(ids)).every((r) => Number.isFinite(r.completed)),
  });
  const cpu1 = cpuSnapshot(stack.processes(), redisProc);
  const t = await times(ids);
  const done = t.filter((r) => Number.isFinite(r.completed));
  const wallMs = Math.max(...done.map((r) => r.completed)) - t0;
  const statuses = {};
  for (const r of t) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const res = {
    label,
    n,
    wallMs,
    submitMs,
    runsPerSec: (done.length * 1000) / wallMs,
    toolCallsPerSec: (done.length * TOOL_CALLS * 1000) / wallMs,
    latency: summary(done.map((r) => r.completed - r.created)),
    statuses,
    cpuMs: cpuDelta(cpu0, cpu1),
    foreignShare: foreignShare(cpu0, cpu1),
  };
  noteForeign(label, res.foreignShare);
  log(`  ${label}: ${n} runs in ${(wallMs / 1000).toFixed(2)} s → ${res.runsPerSec.toFixed(1)} runs/s, p50 ${res.latency.p50.toFixed(0)} ms, p99 ${res.latency.p99.toFixed(0)} ms ${JSON.stringify(statuses)}`);
  return res;
}

/** The in-process loop with a model and an MCP server of its own; `processes()` as a stack's. */
async function startInproc() {
  const model = await startModel();
  const mcp = await startMcp(MCP);
  const loop = await startInProcessLoop({ baseURL: model.baseURL, mcp: mcp.config });
  return {
    loop,
    processes: () => [{ name: 'model', pid: model.proc.pid }, ...(loop.mcpPid ? [{ name: 'mcp-server (stdio)', pid: loop.mcpPid }] : []), ...(mcp.proc ? [{ name: 'mcp-server', pid: mcp.proc.pid }] : [])],
    async stop() {
      await loop.close();
      await stopProc(model.proc);
      if (mcp.proc) await stopProc(mcp.proc);
    },
  };
}

/** n in-process runs at once (one process, no queue), `repeat` times: per-run latency, runs/s, CPU. */
async function inprocBatch(inproc, n, { model, label, repeat }) {
  const all = [];
  for (let i = 0; i < repeat; i++) {
    const l = nth(label, i, repeat);
    await quiet(inproc.processes());
    const cpu0 = cpuSnapshot(inproc.processes(), redisProc);
    const t0 = performance.now();
    const lat = await Promise.all(
      Array.from({ length: n }, async () => {
        const t = performance.now();
        await inproc.loop.run('benchmark', model);
        return performance.now() - t;
      }),
    );
    const wallMs = performance.now() - t0;
    const cpu1 = cpuSnapshot(inproc.processes(), redisProc);
    // The loop runs in this process; it uses no Redis.
    const { 'bench (client)': self, 'redis-server': _, ...cpuMs } = cpuDelta(cpu0, cpu1);
    const res = { label, n, wallMs, runsPerSec: (n * 1000) / wallMs, toolCallsPerSec: (n * TOOL_CALLS * 1000) / wallMs, latency: summary(lat), cpuMs: { ...cpuMs, 'in-process loop (bench)': self }, foreignShare: foreignShare(cpu0, cpu1) };
    noteForeign(l, res.foreignShare);
    log(`  ${l}: ${n} runs in ${(wallMs / 1000).toFixed(2)} s → ${res.runsPerSec.toFixed(1)} runs/s, p50 ${res.latency.p50.toFixed(0)} ms, p99 ${res.latency.p99.toFixed(0)} ms`);
    all.push(res);
  }
  return bestOf(all);
}

// ---------------------------------------------------------------------------------------------

/** CPU (of this process, the client side) and wall time per operation, measured one at a time. */
async function unitCosts(loop) {
  const redisClient = new Redis(redis.url, { maxRetriesPerRequest: null });
  await redisClient.hset('bench-unit', 'f', 'x'.repeat(200));
  const measure = async (label, n, fn) => {
    for (let i = 0; i < Math.min(200, n); i++) await fn();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fn();
    const c = process.cpuUsage(c0);
    return { label, n, cpuMs: (c.user + c.system) / 1000 / n, wallMs: (performance.now() - t0) / n };
  };
  // A hand-off to a process that has been idle a few ms costs more wall time than a
  // back-to-back one (the one-at-a-time scenario is made of such hand-offs): time only the call.
  const afterIdle = async (label, n, fn) => {
    let wall = 0;
    let cpu = 0;
    for (let i = 0; i < n; i++) {
      await sleep(5);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await fn();
      wall += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpu += (c.user + c.system) / 1000;
    }
    return { label, n, cpuMs: cpu / n, wallMs: wall / n };
  };
  const out = [
    await measure('Redis round trip (HGET), client CPU', QUICK ? 1000 : 5000, () => redisClient.hget('bench-unit', 'f')),
    await measure('model call, openai SDK, streamed (tool calls)', QUICK ? 200 : 1000, () => loop.callModel('bench')),
    await measure('MCP tool call, MCP SDK client over ' + MCP, QUICK ? 200 : 1000, () => loop.callTool()),
    await afterIdle('model call, streamed, 5 ms after the last one (processes idle)', QUICK ? 100 : 300, () => loop.callModel('bench')),
    await afterIdle('Redis round trip (HGET), 5 ms after the last one', QUICK ? 100 : 300, () => redisClient.hget('bench-unit', 'f')),
  ];
  await redisClient.del('bench-unit');
  redisClient.disconnect();
  for (const u of out) log(`  unit cost: ${u.label}: ${u.cpuMs.toFixed(3)} ms CPU, ${u.wallMs.toFixed(3)} ms wall`);
  return out;
}

const rotate = (b, k) => Array.from({ length: k }, (_, j) => (b + j) % k);

/**
 * Runs each system's `once()` n times, one run at a time, in `blocks` blocks per system taken in
 * the order `order(block, systems.length)` gives (rotating by default), so that the machine's
 * drift (tens of per cent on this VM) weighs on each alike.
 */
async function interleaved(systems, { n, warm, blocks, order = rotate }) {
  for (const x of systems) for (let i = 0; i < warm; i++) await x.once();
  const all = systems.flatMap((x) => x.procs);
  await quiet(all);
  const times = Object.fromEntries(systems.map((x) => [x.key, []]));
  const c0 = cpuSnapshot(all, redisProc);
  const perBlock = Math.ceil(n / blocks);
  for (let b = 0; b < blocks; b++) {
    for (const j of order(b, systems.length)) {
      const x = systems[j];
      for (let i = 0; i < perBlock && times[x.key].length < n; i++) {
        const t = performance.now();
        await x.once();
        times[x.key].push(performance.now() - t);
      }
    }
  }
  return { times, perBlock, foreignShare: foreignShare(c0, cpuSnapshot(all, redisProc)) };
}

const inprocSystem = (inproc) => ({ key: 'inproc', label: 'in-process loop', procs: inproc.processes(), once: () => inproc.loop.run('benchmark', 'bench'), slow: () => inproc.loop.run('benchmark', `bench-${SLOW_MS}ms`) });
const agentqSystem = (key, label, stack) => ({ key, label, procs: stack.processes(), once: () => agentqOnce(waiter, stack, 'bench'), slow: () => agentqOnce(waiter, stack, `bench-${SLOW_MS}ms`) });

async function scenarioOverhead() {
  log(`1. overhead per step: ${N.seq} runs one at a time each (+${N.seqWarm} warm-up), 0 ms model, the four systems interleaved in ${N.seqBlocks} blocks; MCP over ${MCP}`);
  const inproc = await startInproc();
  const bare = await startBare(ctl, redis.url);
  const client = await bareClient(redis.url, bare);
  const qloop = await startBare(ctl, redis.url, { work: true, mcpTransport: MCP });
  const loopClient = await bareClient(redis.url, qloop);
  const stack = await startAgentq(ctl, redis.url, { mcpTransport: MCP });
  try {
    // Only one system works at a time; the others idle.
    const systems = [
      inprocSystem(inproc),
      { key: 'bare', label: 'bare BullMQ flows', procs: bare.processes(), once: () => client.once() },
      { key: 'loop', label: 'BullMQ loop (no store)', procs: qloop.processes(), once: () => loopClient.once(), slow: () => loopClient.once(`bench-${SLOW_MS}ms`) },
      agentqSystem('agentq', 'agentq', stack),
    ];
    const { times, perBlock, foreignShare: share } = await interleaved(systems, { n: N.seq, warm: N.seqWarm, blocks: N.seqBlocks });
    noteForeign('scenario 1, one at a time', share);
    for (const x of systems) log(`  ${x.label}: p50 ${summary(times[x.key]).p50.toFixed(1)} ms`);
    // The 500 ms model: in-process, the BullMQ loop and agentq alternate run by run.
    const slowSystems = systems.filter((y) => y.slow);
    const slow = Object.fromEntries(slowSystems.map((x) => [x.key, []]));
    for (const x of slowSystems) await x.slow();
    for (let i = 0; i < N.seqSlow; i++) {
      for (const x of slowSystems) {
        const t = performance.now();
        await x.slow();
        slow[x.key].push(performance.now() - t);
      }
    }
    log(`  ${SLOW_MS} ms model: in-process p50 ${summary(slow.inproc).p50.toFixed(0)} ms, BullMQ loop p50 ${summary(slow.loop).p50.toFixed(0)} ms, agentq p50 ${summary(slow.agentq).p50.toFixed(0)} ms`);
    const units = await unitCosts(inproc.loop);
    return {
      interleaved: { blocks: N.seqBlocks, perBlock },
      units,
      ...Object.fromEntries(systems.map((x) => [x.key, summary(times[x.key])])),
      slow: { modelMs: SLOW_MS, ...Object.fromEntries(slowSystems.map((x) => [x.key, summary(slow[x.key])])) },
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

async function scenarioThroughput() {
  log(`2. throughput: ${N.many} runs submitted at once (HTTP, ${HTTP_CONCURRENCY} connections), 0 ms model`);
  const out = [];
  const loop = await startInproc();
  let inproc;
  try {
    await pool(20, 10, () => loop.loop.run('benchmark', 'bench'));
    inproc = await inprocBatch(loop, N.many, { model: 'bench', label: 'in-process loop, one process', repeat: REPEAT });
  } finally {
    await loop.stop();
  }
  for (const workers of [1, 2]) {
    const procs = `${workers} agent-worker${workers > 1 ? 's' : ''}`;
    const bare = await startBare(ctl, redis.url, { agentWorkers: workers });
    const b = await batch(bare, N.many, { label: `bare BullMQ, ${procs}` });
    await bare.stop();
    const qloop = await startBare(ctl, redis.url, { agentWorkers: workers, work: true, mcpTransport: MCP });
    const l = await batch(qloop, N.many, { label: `BullMQ loop, ${procs}` });
    await qloop.stop();
    const profileDir = PROFILE && workers === 1 ? join(ROOT, 'bench', 'results', 'profiles') : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const stack = await startAgentq(ctl, redis.url, { agentWorkers: workers, mcpTransport: MCP, nodeOptions: profileDir ? `--cpu-prof --cpu-prof-dir=${profileDir}` : '' });
    const a = await batch(stack, N.many, { label: `agentq, ${procs}` });
    await stack.stop();
    out.push({ workers, bare: b, loop: l, agentq: a, inproc });
  }
  return out;
}

async function scenarioConcurrency() {
  const sizes = [...new Set([N.few, N.many])];
  const slowModel = `bench-${SLOW_MS}ms`;
  log(`3. realistic latency: ${sizes.join(' and ')} concurrent runs, ${SLOW_MS} ms model`);
  const loop = await startInproc();
  const inproc = {};
  try {
    await Promise.all(Array.from({ length: 10 }, () => loop.loop.run('benchmark', 'bench')));
    for (const n of sizes) inproc[n] = await inprocBatch(loop, n, { model: slowModel, label: `in-process loop, ${n} at once, ${SLOW_MS} ms model`, repeat: 1 });
  } finally {
    await loop.stop();
  }

  // One agent-worker with a slot per concurrent run, with the heap flags the services ship with,
  // then with V8's default heap sizing.
  const measureStack = async (label, v8Heap, runSizes) => {
    const probeDir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-mem-')));
    const stack = await startAgentq(ctl, redis.url, { agentConcurrency: N.many, toolConcurrency: 100, mcpTransport: MCP, probeDir, nodeOptions: '--expose-gc', v8Heap });
    try {
      const idle = memory(stack.processes());
      const batches = {};
      for (const n of runSizes) batches[n] = await batch(stack, n, { model: slowModel, label: `agentq${label}, ${n} runs at once, ${SLOW_MS} ms model` });
      const mem = memory([...stack.processes(), ...redisProc]);
      for (const m of mem) m.started = idle.find((i) => i.name === m.name)?.rss;
      // What the services' V8 heaps hold at the end (RSS peaks include garbage not yet collected).
      const probes = await readProbes(probeDir, stack.servicePids());
      const byPid = Object.fromEntries(stack.processes().map((p) => [p.pid, p.name]));
      for (const [pid, v] of Object.entries(probes)) {
        const m = mem.find((x) => x.name === byPid[pid]);
        if (m) m.heap = { usedMB: v.memory.heapUsed / 2 ** 20, totalMB: v.memory.heapTotal / 2 ** 20, liveMB: v.afterGc ? v.afterGc.heapUsed / 2 ** 20 : undefined };
      }
      return { batches, memory: mem, config: stack.config };
    } finally {
      await stack.stop();
      rmSync(probeDir, { recursive: true, force: true });
    }
  };
  // Scale-out: capped model-step slots per agent-worker, on 1 and on 2 agent-workers.
  const scaleOut = { slots: SCALE_SLOTS, n: N.scaleOut, runs: {} };
  for (const workers of [1, 2]) {
    const stack = await startAgentq(ctl, redis.url, { agentWorkers: workers, agentConcurrency: SCALE_SLOTS, mcpTransport: MCP });
    try {
      scaleOut.runs[workers] = await batch(stack, N.scaleOut, { model: slowModel, label: `agentq, ${N.scaleOut} runs at once, ${SLOW_MS} ms model, ${workers} agent-worker${workers > 1 ? 's' : ''} × ${SCALE_SLOTS} slots` });
    } finally {
      await stack.stop();
    }
  }
  const shipped = await measureStack('', false, sizes);
  const v8Run = await measureStack(' (V8 default heap)', true, [N.many]);
  return {
    modelMs: SLOW_MS,
    idealMs: STEPS * SLOW_MS,
    sizes,
    inproc,
    agentq: shipped.batches,
    config: shipped.config,
    heapFlags: HEAP_FLAGS,
    memory: shipped.memory,
    v8Defaults: { agentq: v8Run.batches[N.many], memory: v8Run.memory },
    scaleOut,
  };
}

/** Commands and round trips of one window, from the server's stats and the clients' probes. */
function redisWindow(s0, s1, names, { runs, ownCommands = {}, extraClient = null }) {
  const server = {};
  for (const [k, v] of Object.entries(s1.stats)) {
    const calls = v.calls - (s0.stats[k]?.calls ?? 0) - (ownCommands[k] ?? 0);
    const usec = v.usec - (s0.stats[k]?.usec ?? 0);
    if (calls > 0 && !['info', 'config|resetstat'].includes(k)) server[k] = { calls, usec };
  }
  const byProcess = {};
  const clientCommands = {};
  for (const pid of Object.keys(s1.probes)) {
    const a = s0.probes[pid] ?? { commands: {}, trips: 0 };
    const b = s1.probes[pid];
    const cmds = {};
    for (const [k, v] of Object.entries(b.commands)) {
      const d = v - (a.commands[k] ?? 0);
      if (d > 0) {
        cmds[k] = d;
        clientCommands[k] = (clientCommands[k] ?? 0) + d;
      }
    }
    byProcess[names[pid] ?? pid] = { trips: b.trips - a.trips, commands: Object.values(cmds).reduce((x, y) => x + y, 0), byCommand: cmds };
  }
  if (extraClient) {
    byProcess[extraClient.name] = extraClient;
    for (const [k, v] of Object.entries(extraClient.byCommand)) clientCommands[k] = (clientCommands[k] ?? 0) + v;
  }
  return {
    runs,
    steps: runs * STEPS,
    serverCommands: Object.values(server).reduce((x, y) => x + y.calls, 0),
    server,
    clientCommands,
    trips: Object.values(byProcess).reduce((x, y) => x + y.trips, 0),
    byProcess,
    redisCpuMs: (s1.cpu['redis-server'] ?? 0) - (s0.cpu['redis-server'] ?? 0),
  };
}

/**
 * What a stack (started with `probeDir`) asks of Redis: N.redisSeq runs one at a time (an idle
 * system between runs: workers fetch by blocking; completion seen by polling ZCARD), then
 * N.redisBatch at once (a busy system).
 */
async function redisCost(stack, probeDir) {
  const { submit, close } = await submitter(stack);
  const names = Object.fromEntries(stack.processes().map((p) => [p.pid, p.name]));
  // The bare client's submissions are not probed: one addStandardJob a run.
  const extraClient = (runs) => (stack.kind === 'agentq' ? null : { name: 'bench (submits runs)', trips: runs, commands: runs, byCommand: { 'evalsha:addStandardJob': runs } });
  const completed = () => ctl.zcard(stack.completedKey);
  try {
    // Warm up: scripts loaded, connections open, JIT warm.
    const warm = await completed();
    await pool(10, 5, submit);
    await waitCompleted(ctl, stack, warm + 10 * STEPS, { timeoutMs: 60_000 });
    await sleep(300);
    await quiet(stack.processes());
    const snap = async () => ({ stats: await commandStats(ctl), probes: await readProbes(probeDir, stack.servicePids()), cpu: cpuSnapshot(redisProc) });
    const window = async (runs, concurrency, everyMs) => {
      const s0 = await snap();
      let polls = 1;
      let base = await completed();
      if (concurrency === 1) {
        for (let i = 0; i < runs; i++) {
          await submit();
          base += STEPS;
          await waitCompleted(ctl, stack, base, { timeoutMs: 60_000, everyMs, onPoll: () => polls++ });
        }
      } else {
        await pool(runs, concurrency, submit);
        await waitCompleted(ctl, stack, base + runs * STEPS, { timeoutMs: 120_000, everyMs, onPoll: () => polls++ });
      }
      await sleep(100);
      return redisWindow(s0, await snap(), names, { runs, ownCommands: { zcard: polls }, extraClient: extraClient(runs) });
    };
    const sequential = await window(N.redisSeq, 1, 2);
    const batchWindow = await window(N.redisBatch, HTTP_CONCURRENCY, 25);
    return { sequential, batch: batchWindow };
  } finally {
    await close();
  }
}

/** Starts a stack with the Redis probe, measures its Redis cost, stops it. */
async function probedRedisCost(start) {
  const probeDir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-probe-')));
  const stack = await start(probeDir);
  try {
    return await redisCost(stack, probeDir);
  } finally {
    await stack.stop();
    rmSync(probeDir, { recursive: true, force: true });
  }
}

const perStep = (w, k) => (w[k] / w.steps).toFixed(1);

async function scenarioRedis() {
  log(`4. Redis cost: ${N.redisSeq} runs one at a time, then ${N.redisBatch} at once, INFO commandstats + client probes`);
  const out = {};
  out.bare = await probedRedisCost((probeDir) => startBare(ctl, redis.url, { probeDir }));
  out.agentq = await probedRedisCost((probeDir) => startAgentq(ctl, redis.url, { probeDir, mcpTransport: MCP }));
  for (const [kind, { sequential: s, batch: b }] of Object.entries(out)) {
    log(`  ${kind}: ${perStep(s, 'serverCommands')} / ${perStep(b, 'serverCommands')} Redis commands per step (one at a time / at once), ${perStep(s, 'trips')} / ${perStep(b, 'trips')} round trips`);
  }
  return out;
}

/** BENCH_COMPARE: agentq of this checkout ("this") against another built checkout's ("other"). */
async function compare(other) {
  const roots = { this: ROOT, other };
  const blocks = Math.ceil(COMPARE_RUNS / 10);
  log(`compare: ${COMPARE_RUNS} runs one at a time each (+${N.seqWarm} warm-up), 0 ms model, interleaved in ${blocks} blocks; then the Redis cost of each`);
  const inproc = await startInproc();
  const stacks = {};
  let one;
  try {
    for (const [key, root] of Object.entries(roots)) stacks[key] = await startAgentq(ctl, redis.url, { root, tag: key, mcpTransport: MCP });
    // Each block: the in-process loop, then this and other in turns (ABBA), so that each follows each as often.
    const systems = [inprocSystem(inproc), agentqSystem('this', 'this', stacks.this), agentqSystem('other', 'other', stacks.other)];
    one = await interleaved(systems, { n: COMPARE_RUNS, warm: N.seqWarm, blocks, order: (b) => (b % 2 ? [0, 2, 1] : [0, 1, 2]) });
    noteForeign('compare, one at a time', one.foreignShare);
  } finally {
    for (const stack of Object.values(stacks)) await stack.stop();
    await inproc.stop();
  }
  const redisCost = {};
  for (const [key, root] of Object.entries(roots)) redisCost[key] = await probedRedisCost((probeDir) => startAgentq(ctl, redis.url, { root, tag: key, probeDir, mcpTransport: MCP }));
  return {
    startedAt: new Date(T0).toISOString(),
    roots,
    commits: { this: commitOf(ROOT), other: commitOf(other) },
    steps: STEPS,
    mcpTransport: MCP,
    blocks,
    perBlock: one.perBlock,
    latency: Object.fromEntries(Object.entries(one.times).map(([k, v]) => [k, summary(v)])),
    redis: redisCost,
    times: one.times,
  };
}

// ---------------------------------------------------------------------------------------------

if (COMPARE) {
  let c;
  try {
    c = await compare(COMPARE);
  } finally {
    ctl.disconnect();
    waiter.disconnect();
    await redis.stop();
  }
  c.foreign = foreign;
  const file = join(ROOT, 'bench', 'results', 'compare.json');
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(file, `${JSON.stringify(c, null, 2)}\n`);
  say();
  say(compareText(c));
  say();
  say(`bench: done in ${((Date.now() - T0) / 1000).toFixed(0)} s; wrote bench/results/compare.json`);
  process.exit(0);
}

const results = {
  quick: QUICK,
  startedAt: new Date(T0).toISOString(),
  machine: await machineInfo(ctl, redis),
  config: { repeat: REPEAT, serviceNodeOptions: process.env.BENCH_NODE_OPTIONS ?? null, heapFlags: HEAP_FLAGS, rounds: ROUNDS, fanout: FANOUT, steps: STEPS, toolCallsPerRun: TOOL_CALLS, mcpTransport: MCP, sizes: N, httpConcurrency: HTTP_CONCURRENCY, slowModelMs: SLOW_MS },
};
let failed = null;
try {
  if (want(1)) results.overhead = await scenarioOverhead();
  if (want(2)) results.throughput = await scenarioThroughput();
  if (want(3)) results.concurrency = await scenarioConcurrency();
  if (want(4)) results.redis = await scenarioRedis();
} catch (err) {
  failed = err;
  process.stderr.write(`bench: ${err.stack ?? err}\n`);
} finally {
  ctl.disconnect();
  waiter.disconnect();
  await redis.stop();
}
results.durationS = (Date.now() - T0) / 1000;
results.foreign = foreign;
if (failed) process.exit(1);

const canonical = !QUICK && !ONLY && !process.env.BENCH_NODE_OPTIONS && !process.env.BENCH_RUNS;
const out = report(results, { write: canonical });
say();
say(out.text);
const dir = join(ROOT, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const jsonFile = join(dir, QUICK ? 'quick.json' : canonical ? 'latest.json' : 'partial.json');
writeFileSync(jsonFile, `${JSON.stringify(results, null, 2)}\n`);
say();
say(`bench: done in ${results.durationS.toFixed(0)} s; wrote ${[jsonFile, ...out.files].map((f) => f.replace(`${ROOT}/`, '')).join(', ')}`);

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
// bench/results/chart.png. Needs `npm run build` first (npm run bench does it) and
// redis-server on the PATH (it starts its own, on a free port, AOF on as in
// docker-compose.yml; BENCH_REDIS_URL uses another instead, keys under a unique prefix).
//
// Env: BENCH_QUICK=1 (a smoke version, ≈ 1 minute; writes bench/results/quick.json only),
// BENCH_MCP=stdio|http (how the no-op MCP server is reached; default stdio),
// BENCH_ONLY=1,3 (some scenarios only; does not write BENCHMARKS.md),
// BENCH_RUNS=1000 (runs in scenarios 2 and 3), BENCH_PROFILE=1 (CPU profiles of the services
// during scenario 2 with one agent-worker, into bench/results/profiles; summarise one with
// `node bench/profile-summary.mjs <file>`), BENCH_NODE_OPTIONS (extra NODE_OPTIONS for the
// agentq services, which otherwise get the heap flags they ship with (scripts/lib/services.mjs),
// e.g. "--max-old-space-size=512" to size the heap differently; does not write BENCHMARKS.md),
// BENCH_REPORT_ONLY=1 (no measuring: render BENCHMARKS.md and the chart again from
// bench/results/latest.json, e.g. after editing bench/findings.md).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import {
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
  pool,
  readProbes,
  ROOT,
  ROUNDS,
  sleep,
  startAgentq,
  startBare,
  startMcp,
  startModel,
  startRedis,
  submitAgentqRun,
  TOOL_CALLS,
  STEPS,
  waitAgentqRun,
  waitCompleted,
} from './lib/harness.mjs';
import { startInProcessLoop } from './lib/inprocess-loop.mjs';
import { stopProc, tmpDir } from './lib/procs.mjs';
import { HEAP_FLAGS } from '../scripts/lib/services.mjs';
import { machineInfo, report } from './lib/report.mjs';
import { summary } from './lib/stats.mjs';

const truthy = (v) => /^(1|true|yes|on)$/i.test(v ?? '');
const QUICK = truthy(process.env.BENCH_QUICK);
const MCP = process.env.BENCH_MCP === 'http' ? 'http' : 'stdio';
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
const PROFILE = truthy(process.env.BENCH_PROFILE);
const MANY = Number(process.env.BENCH_RUNS) || (QUICK ? 100 : 1000);
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
const REPEAT = Number(process.env.BENCH_REPEAT) || (QUICK ? 1 : 2);

if (truthy(process.env.BENCH_REPORT_ONLY)) {
  // Renders BENCHMARKS.md and the chart again from the last full run (after editing bench/findings.md).
  const latest = JSON.parse(readFileSync(join(ROOT, 'bench', 'results', 'latest.json'), 'utf8'));
  const { files } = report(latest, { write: true });
  process.stdout.write(`bench: wrote ${files.map((f) => f.replace(`${ROOT}/`, '')).join(', ')} from bench/results/latest.json\n`);
  process.exit(0);
}

const missing = ['api', 'agent-worker', 'tool-worker'].map((s) => join(ROOT, 'services', s, 'dist', 'main.js')).concat(join(ROOT, 'packages/scripted-llm/dist/index.js')).filter((f) => !existsSync(f));
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
let quietBudgetMs = Number(process.env.BENCH_QUIET_BUDGET_MS ?? 180_000);
const quiet = async (processes = []) => {
  const t = Date.now();
  const share = await waitQuiet([...processes, ...redisProc], { maxMs: Math.max(0, Math.min(30_000, quietBudgetMs)) });
  quietBudgetMs -= Date.now() - t;
  if (share >= 0.1) log(`  (the machine did not go quiet: other processes use ${(share * 100).toFixed(0)} % of it; measuring anyway)`);
};

async function agentqOnce(stack, model) {
  const id = await submitAgentqRun(stack, model);
  const type = await waitAgentqRun(waiter, stack, id);
  if (type !== 'run.completed') throw new Error(`run ${id} ended as ${type}`);
  return id;
}

/** Throughput-style batch: n runs submitted at once; per-run times from what the system stored. */
/**
 * Throughput-style batch, REPEAT times on the same processes; keeps the fastest repetition
 * (interference from other processes only ever slows a run down) and notes every one's runs/s.
 */
async function batch(stack, n, opts) {
  // Warm up (JIT, connections), then measure from the first submission to the last completion.
  const warm = Math.min(20, n);
  const before0 = await ctl.zcard(`${stack.prefix}:agent:completed`);
  await pool(warm, 10, () => opts.submit());
  await waitCompleted(ctl, stack.prefix, before0 + warm * STEPS, { timeoutMs: 60_000 });
  const all = [];
  for (let i = 0; i < REPEAT; i++) all.push(await batchOnce(stack, n, { ...opts, label: REPEAT > 1 ? `${opts.label} (#${i + 1})` : opts.label }));
  const best = all.reduce((a, b) => (b.runsPerSec > a.runsPerSec ? b : a));
  return { ...best, label: opts.label, repetitions: all.map((r) => ({ runsPerSec: r.runsPerSec, wallMs: r.wallMs, p50: r.latency.p50, p99: r.latency.p99, foreignShare: r.foreignShare })) };
}

async function batchOnce(stack, n, { submit, times, label }) {
  await quiet(stack.processes());
  const before = await ctl.zcard(`${stack.prefix}:agent:completed`);
  const cpu0 = cpuSnapshot(stack.processes(), redisProc);
  const t0 = Date.now();
  const ids = await pool(n, HTTP_CONCURRENCY, () => submit());
  const submitted = Date.now();
  let ended = false;
  await waitCompleted(ctl, stack.prefix, before + n * STEPS, {
    timeoutMs: Math.max(120_000, n * 300),
    stalled: async () => {
      const t = await times(ids);
      ended = t.every((r) => Number.isFinite(r.completed));
      return ended;
    },
  });
  const seen = Date.now();
  const cpu1 = cpuSnapshot(stack.processes(), redisProc);
  const t = await times(ids);
  const done = t.filter((r) => Number.isFinite(r.completed));
  const last = Math.max(...done.map((r) => r.completed));
  const wallMs = last - t0;
  const statuses = {};
  for (const r of t) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const res = {
    label,
    n,
    wallMs,
    submitMs: submitted - t0,
    detectedMs: seen - t0,
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

const agentqBatch = (stack, n, opts = {}) =>
  batch(stack, n, { ...opts, submit: () => submitAgentqRun(stack, opts.model ?? 'bench'), times: (ids) => agentqRunTimes(ctl, stack.prefix, ids) });

async function bareBatch(stack, n, opts = {}) {
  const client = await bareClient(redis.url, stack);
  try {
    return await batch(stack, n, {
      ...opts,
      submit: async () => {
        const id = client.newId();
        await client.add(id);
        return id;
      },
      times: (ids) => bareRunTimes(ctl, stack.prefix, ids),
    });
  } finally {
    await client.close();
  }
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

async function scenarioOverhead() {
  log(`1. overhead per step: ${N.seq} runs one at a time each (+${N.seqWarm} warm-up), 0 ms model, the four systems interleaved in ${N.seqBlocks} blocks; MCP over ${MCP}`);
  const model = await startModel();
  const mcp = await startMcp(MCP);
  const loop = await startInProcessLoop({ baseURL: model.baseURL, mcp: mcp.config });
  const loopProcs = [{ name: 'model', pid: model.proc.pid }, ...(loop.mcpPid ? [{ name: 'mcp-server (stdio)', pid: loop.mcpPid }] : []), ...(mcp.proc ? [{ name: 'mcp-server', pid: mcp.proc.pid }] : [])];
  const bare = await startBare(ctl, redis.url);
  const client = await bareClient(redis.url, bare);
  const qloop = await startBare(ctl, redis.url, { work: true, mcpTransport: MCP });
  const loopClient = await bareClient(redis.url, qloop);
  const stack = await startAgentq(ctl, redis.url, { mcpTransport: MCP });
  try {
    // All four are up at once and alternate, block by block (in a rotating order), so that
    // the machine's drift during the scenario (it moves by tens of per cent on this VM) weighs
    // on each alike. Only one system works at a time; the others idle.
    const systems = [
      { key: 'inproc', label: 'in-process loop', procs: loopProcs, once: () => loop.run('benchmark', 'bench'), slow: () => loop.run('benchmark', `bench-${SLOW_MS}ms`) },
      { key: 'bare', label: 'bare BullMQ flows', procs: bare.processes(), once: () => client.once() },
      { key: 'loop', label: 'BullMQ loop (no store)', procs: qloop.processes(), once: () => loopClient.once(), slow: () => loopClient.once(`bench-${SLOW_MS}ms`) },
      { key: 'agentq', label: 'agentq', procs: stack.processes(), once: () => agentqOnce(stack, 'bench'), slow: () => agentqOnce(stack, `bench-${SLOW_MS}ms`) },
    ];
    const all = systems.flatMap((x) => x.procs);
    for (const x of systems) for (let i = 0; i < N.seqWarm; i++) await x.once();
    await quiet(all);
    const times = Object.fromEntries(systems.map((x) => [x.key, []]));
    const c0 = cpuSnapshot(all, redisProc);
    const perBlock = Math.ceil(N.seq / N.seqBlocks);
    for (let b = 0; b < N.seqBlocks; b++) {
      for (let j = 0; j < systems.length; j++) {
        const x = systems[(b + j) % systems.length];
        for (let i = 0; i < perBlock && times[x.key].length < N.seq; i++) {
          const t = performance.now();
          await x.once();
          times[x.key].push(performance.now() - t);
        }
      }
    }
    noteForeign('scenario 1, one at a time', foreignShare(c0, cpuSnapshot(all, redisProc)));
    for (const x of systems) log(`  ${x.label}: p50 ${summary(times[x.key]).p50.toFixed(1)} ms`);
    // The 500 ms model: in-process, the BullMQ loop and agentq alternate run by run.
    const slow = { inproc: [], loop: [], agentq: [] };
    for (const x of systems) if (x.slow) await x.slow();
    for (let i = 0; i < N.seqSlow; i++) {
      for (const x of systems.filter((y) => y.slow)) {
        const t = performance.now();
        await x.slow();
        slow[x.key].push(performance.now() - t);
      }
    }
    log(`  ${SLOW_MS} ms model: in-process p50 ${summary(slow.inproc).p50.toFixed(0)} ms, BullMQ loop p50 ${summary(slow.loop).p50.toFixed(0)} ms, agentq p50 ${summary(slow.agentq).p50.toFixed(0)} ms`);
    const units = await unitCosts(loop);
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
    await loop.close();
    await stopProc(model.proc);
    if (mcp.proc) await stopProc(mcp.proc);
  }
}

/** The in-process loop with n runs at once (one process, no queue): per-run latency, runs/s, CPU. */
async function inprocBatch(n, model, label) {
  const m = await startModel();
  const mcp = await startMcp(MCP);
  const loop = await startInProcessLoop({ baseURL: m.baseURL, mcp: mcp.config });
  const processes = () => [{ name: 'model', pid: m.proc.pid }, ...(loop.mcpPid ? [{ name: 'mcp-server (stdio)', pid: loop.mcpPid }] : []), ...(mcp.proc ? [{ name: 'mcp-server', pid: mcp.proc.pid }] : [])];
  try {
    await pool(20, 10, () => loop.run('benchmark', 'bench'));
    const all = [];
    for (let i = 0; i < REPEAT; i++) {
      await quiet(processes());
      const cpu0 = cpuSnapshot(processes(), []);
      const t0 = performance.now();
      const lat = await Promise.all(
        Array.from({ length: n }, async () => {
          const t = performance.now();
          await loop.run('benchmark', model);
          return performance.now() - t;
        }),
      );
      const wallMs = performance.now() - t0;
      const cpu1 = cpuSnapshot(processes(), []);
      const cpuMs = cpuDelta(cpu0, cpu1);
      const l = REPEAT > 1 ? `${label} (#${i + 1})` : label;
      const share = foreignShare(cpu0, cpu1);
      noteForeign(l, share);
      cpuMs['in-process loop (bench)'] = cpuMs['bench (client)'];
      delete cpuMs['bench (client)'];
      const res = { label, n, wallMs, runsPerSec: (n * 1000) / wallMs, toolCallsPerSec: (n * TOOL_CALLS * 1000) / wallMs, latency: summary(lat), cpuMs, foreignShare: share };
      log(`  ${l}: ${n} runs in ${(wallMs / 1000).toFixed(2)} s → ${res.runsPerSec.toFixed(1)} runs/s, p50 ${res.latency.p50.toFixed(0)} ms, p99 ${res.latency.p99.toFixed(0)} ms`);
      all.push(res);
    }
    const best = all.reduce((a, b) => (b.runsPerSec > a.runsPerSec ? b : a));
    return { ...best, repetitions: all.map((r) => ({ runsPerSec: r.runsPerSec, wallMs: r.wallMs, p50: r.latency.p50, p99: r.latency.p99, foreignShare: r.foreignShare })) };
  } finally {
    await loop.close();
    await stopProc(m.proc);
    if (mcp.proc) await stopProc(mcp.proc);
  }
}

async function scenarioThroughput() {
  log(`2. throughput: ${N.many} runs submitted at once (HTTP, ${HTTP_CONCURRENCY} connections), 0 ms model`);
  const out = [];
  const inproc = await inprocBatch(N.many, 'bench', 'in-process loop, one process');
  for (const workers of [1, 2]) {
    const procs = `${workers} agent-worker${workers > 1 ? 's' : ''}`;
    const bare = await startBare(ctl, redis.url, { agentWorkers: workers });
    const b = await bareBatch(bare, N.many, { label: `bare BullMQ, ${procs}` });
    await bare.stop();
    const qloop = await startBare(ctl, redis.url, { agentWorkers: workers, work: true, mcpTransport: MCP });
    const l = await bareBatch(qloop, N.many, { label: `BullMQ loop, ${procs}` });
    await qloop.stop();
    const profileDir = PROFILE && workers === 1 ? join(ROOT, 'bench', 'results', 'profiles') : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });
    const stack = await startAgentq(ctl, redis.url, { agentWorkers: workers, mcpTransport: MCP, nodeOptions: profileDir ? `--cpu-prof --cpu-prof-dir=${profileDir}` : '' });
    const a = await agentqBatch(stack, N.many, { label: `agentq, ${procs}` });
    await stack.stop();
    out.push({ workers, bare: b, loop: l, agentq: a, inproc });
  }
  return out;
}

async function scenarioConcurrency() {
  log(`3. realistic latency: ${[...new Set([N.few, N.many])].join(' and ')} concurrent runs, ${SLOW_MS} ms model`);
  // Baseline: the in-process loop running the same number of runs at once.
  const model = await startModel();
  const mcp = await startMcp(MCP);
  const loop = await startInProcessLoop({ baseURL: model.baseURL, mcp: mcp.config });
  await Promise.all(Array.from({ length: 10 }, () => loop.run('benchmark', 'bench')));
  const loopProcs = [{ name: 'model', pid: model.proc.pid }, ...(loop.mcpPid ? [{ name: 'mcp-server (stdio)', pid: loop.mcpPid }] : [])];
  const sizes = [...new Set([N.few, N.many])];
  const inproc = {};
  for (const n of sizes) {
    await quiet(loopProcs);
    const c0 = cpuSnapshot(loopProcs, redisProc);
    const t0 = performance.now();
    const lat = await Promise.all(
      Array.from({ length: n }, async () => {
        const t = performance.now();
        await loop.run('benchmark', `bench-${SLOW_MS}ms`);
        return performance.now() - t;
      }),
    );
    inproc[n] = { n, wallMs: performance.now() - t0, latency: summary(lat) };
    noteForeign(`in-process loop, ${n} at once, ${SLOW_MS} ms model`, foreignShare(c0, cpuSnapshot(loopProcs, redisProc)));
    log(`  in-process loop, ${n} at once: ${(inproc[n].wallMs / 1000).toFixed(2)} s`);
  }
  await loop.close();
  await stopProc(model.proc);
  if (mcp.proc) await stopProc(mcp.proc);

  // One agent-worker with a slot per concurrent run: a model step is I/O, it holds a slot for 500 ms.
  // The services run with the heap sizing they ship with (scripts/lib/services.mjs HEAP_FLAGS,
  // the Dockerfile); then again with V8's default heap sizing, to show what those flags buy.
  const measureStack = async (label, v8Heap, runSizes) => {
    const probeDir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-mem-')));
    const stack = await startAgentq(ctl, redis.url, { agentConcurrency: N.many, toolConcurrency: 100, mcpTransport: MCP, probeDir, nodeOptions: '--expose-gc', v8Heap });
    try {
      const idle = memory(stack.processes());
      const batches = {};
      for (const n of runSizes) batches[n] = await agentqBatch(stack, n, { model: `bench-${SLOW_MS}ms`, label: `agentq${label}, ${n} runs at once, ${SLOW_MS} ms model` });
      const mem = memory([...stack.processes(), ...redisProc]);
      for (const m of mem) m.started = idle.find((i) => i.name === m.name)?.rss;
      // What the services' V8 heaps hold at the end (RSS peaks include garbage not yet collected).
      const probes = await readProbes(probeDir, stack.servicePids());
      const byPid = Object.fromEntries(stack.processes().map((p) => [p.pid, p.name]));
      for (const [pid, v] of Object.entries(probes)) {
        const m = mem.find((x) => x.name === byPid[pid]);
        if (m) m.heap = { usedMB: v.memory.heapUsed / 2 ** 20, totalMB: v.memory.heapTotal / 2 ** 20, externalMB: v.memory.external / 2 ** 20, liveMB: v.afterGc ? v.afterGc.heapUsed / 2 ** 20 : undefined };
      }
      return { batches, memory: mem, config: stack.config };
    } finally {
      await stack.stop();
      rmSync(probeDir, { recursive: true, force: true });
    }
  };
  // Scale-out where this machine can show it: with the model step (I/O) as the limit rather
  // than the 2 cores, a second agent-worker should add its slots to the first's.
  const scaleOut = { slots: SCALE_SLOTS, n: N.scaleOut, runs: {} };
  for (const workers of [1, 2]) {
    const stack = await startAgentq(ctl, redis.url, { agentWorkers: workers, agentConcurrency: SCALE_SLOTS, mcpTransport: MCP });
    try {
      scaleOut.runs[workers] = await agentqBatch(stack, N.scaleOut, { model: `bench-${SLOW_MS}ms`, label: `agentq, ${N.scaleOut} runs at once, ${SLOW_MS} ms model, ${workers} agent-worker${workers > 1 ? 's' : ''} × ${SCALE_SLOTS} slots` });
    } finally {
      await stack.stop();
    }
  }
  const shipped = await measureStack('', false, sizes);
  const agentq = shipped.batches;
  const mem = shipped.memory;
  const v8Run = await measureStack(' (V8 default heap)', true, [N.many]);
  const v8Defaults = { agentq: v8Run.batches[N.many], memory: v8Run.memory };
  const stack = shipped;
  return { modelMs: SLOW_MS, idealMs: STEPS * SLOW_MS, sizes, inproc, agentq, config: stack.config, heapFlags: HEAP_FLAGS, memory: mem, v8Defaults, scaleOut };
}

/** Commands and round trips of one window, from the server's stats and the clients' probes. */
function redisWindow(s0, s1, p0, p1, names, { runs, ownCommands = {}, extraClient = null }) {
  const server = {};
  for (const [k, v] of Object.entries(s1)) {
    const calls = v.calls - (s0[k]?.calls ?? 0) - (ownCommands[k] ?? 0);
    const usec = v.usec - (s0[k]?.usec ?? 0);
    if (calls > 0 && !['info', 'config|resetstat'].includes(k)) server[k] = { calls, usec };
  }
  const byProcess = {};
  const clientCommands = {};
  for (const pid of Object.keys(p1)) {
    const a = p0[pid] ?? { commands: {}, trips: 0 };
    const b = p1[pid];
    const name = names[pid] ?? pid;
    const cmds = {};
    for (const [k, v] of Object.entries(b.commands)) {
      const d = v - (a.commands[k] ?? 0);
      if (d > 0) {
        cmds[k] = d;
        clientCommands[k] = (clientCommands[k] ?? 0) + d;
      }
    }
    byProcess[name] = { trips: b.trips - a.trips, commands: Object.values(cmds).reduce((x, y) => x + y, 0), byCommand: cmds };
  }
  if (extraClient) {
    byProcess[extraClient.name] = extraClient;
    for (const [k, v] of Object.entries(extraClient.byCommand)) clientCommands[k] = (clientCommands[k] ?? 0) + v;
  }
  const steps = runs * STEPS;
  return {
    runs,
    steps,
    serverCommands: Object.values(server).reduce((x, y) => x + y.calls, 0),
    serverUsec: Object.values(server).reduce((x, y) => x + y.usec, 0),
    server,
    clientCommands,
    trips: Object.values(byProcess).reduce((x, y) => x + y.trips, 0),
    byProcess,
  };
}

async function scenarioRedis() {
  log(`4. Redis cost: ${N.redisSeq} runs one at a time, then ${N.redisBatch} at once, INFO commandstats + client probes`);
  const out = {};
  for (const kind of ['bare', 'agentq']) {
    const probeDir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-probe-')));
    const stack = kind === 'agentq' ? await startAgentq(ctl, redis.url, { probeDir, mcpTransport: MCP }) : await startBare(ctl, redis.url, { probeDir });
    const client = kind === 'bare' ? await bareClient(redis.url, stack) : null;
    const names = Object.fromEntries(stack.processes().map((p) => [p.pid, p.name]));
    const submit = async () => {
      if (kind === 'agentq') return submitAgentqRun(stack, 'bench');
      const id = client.newId();
      await client.add(id);
      return id;
    };
    const completed = () => ctl.zcard(`${stack.prefix}:agent:completed`);
    // Warm up: scripts loaded, connections open, JIT warm.
    const warm = await completed();
    await pool(10, 5, submit);
    await waitCompleted(ctl, stack.prefix, warm + 10 * STEPS, { timeoutMs: 60_000 });
    await sleep(300);

    await quiet(stack.processes());
    const snap = async () => ({ stats: await commandStats(ctl), probes: await readProbes(probeDir, stack.servicePids()), cpu: cpuSnapshot(redisProc) });
    const windows = {};
    let polls = 0;
    let s0 = await snap();
    // One at a time: an idle system between runs (workers fetch by blocking), completion seen by polling ZCARD.
    let base = await completed();
    polls++;
    for (let i = 0; i < N.redisSeq; i++) {
      await submit();
      base += STEPS;
      await waitCompleted(ctl, stack.prefix, base, { timeoutMs: 60_000, everyMs: 2, onPoll: () => polls++ });
    }
    await sleep(100);
    let s1 = await snap();
    const bareSubmit = (runs) => (kind === 'bare' ? { name: 'bench (submits runs)', trips: runs, commands: runs, byCommand: { 'evalsha:addStandardJob': runs } } : null);
    windows.sequential = redisWindow(s0.stats, s1.stats, s0.probes, s1.probes, names, { runs: N.redisSeq, ownCommands: { zcard: polls }, extraClient: bareSubmit(N.redisSeq) });
    windows.sequential.redisCpuMs = (s1.cpu['redis-server'] ?? 0) - (s0.cpu['redis-server'] ?? 0);
    // At once: a busy system.
    s0 = s1;
    polls = 0;
    base = await completed();
    polls++;
    await pool(N.redisBatch, HTTP_CONCURRENCY, submit);
    await waitCompleted(ctl, stack.prefix, base + N.redisBatch * STEPS, { timeoutMs: 120_000, everyMs: 25, onPoll: () => polls++ });
    await sleep(100);
    s1 = await snap();
    windows.batch = redisWindow(s0.stats, s1.stats, s0.probes, s1.probes, names, { runs: N.redisBatch, ownCommands: { zcard: polls }, extraClient: bareSubmit(N.redisBatch) });
    windows.batch.redisCpuMs = (s1.cpu['redis-server'] ?? 0) - (s0.cpu['redis-server'] ?? 0);
    await client?.close();
    await stack.stop();
    rmSync(probeDir, { recursive: true, force: true });
    out[kind] = windows;
    const w = windows.batch;
    log(`  ${kind}: ${(windows.sequential.serverCommands / windows.sequential.steps).toFixed(1)} / ${(w.serverCommands / w.steps).toFixed(1)} Redis commands per step (one at a time / at once), ${(windows.sequential.trips / windows.sequential.steps).toFixed(1)} / ${(w.trips / w.steps).toFixed(1)} round trips`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

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

#!/usr/bin/env node
// @ts-check
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
//   4. Redis cost: commands, round trips, Redis CPU, Redis's system calls and bytes (in, and into
//      its AOF) per step, by command and by script (the slow log), beside bare BullMQ and the BullMQ
//      loop, each on an emptied Redis
//   5. Redis-bound throughput: Redis capped at a share of one core (a cgroup CPU quota; skipped
//      where none can be set), so that it limits each system: runs/s and Redis CPU per step of
//      agentq, bare BullMQ and the BullMQ loop, as on a Redis shard that serves many worker hosts
//
// Prints a table and writes BENCHMARKS.md, bench/results/latest.json and
// bench/results/chart.svg. Needs `npm run build` first (npm run bench does it) and
// redis-server on the PATH (it starts its own, on a free port, AOF on as in
// docker-compose.yml; BENCH_REDIS_URL uses another instead, keys under a unique prefix).
//
// Env: BENCH_QUICK=1 (a smoke version; writes bench/results/quick.json only),
// BENCH_MCP=stdio|http (how the no-op MCP server is reached; default stdio),
// BENCH_ONLY=1,3 (some scenarios only; does not write BENCHMARKS.md),
// BENCH_RUNS=1000 (runs in scenarios 2 and 3; with BENCH_COMPARE, runs of each checkout, 600),
// BENCH_PROFILE=1 (CPU profiles of the services during scenario 2 with one agent-worker, into
// bench/results/profiles; summarise one with `node bench/profile-summary.mjs <file>`), BENCH_NODE_OPTIONS (extra NODE_OPTIONS for the
// agentq services, which otherwise get the heap flags they ship with (scripts/lib/services.mjs),
// e.g. "--max-old-space-size=512" to size the heap differently; does not write BENCHMARKS.md),
// BENCH_REPORT_ONLY=1 (no measuring: render BENCHMARKS.md and the chart again from
// bench/results/latest.json, e.g. after a change to the page (bench/lib/markdown.mjs)),
// BENCH_COMPARE=<path of another built checkout of agentq> (A/B of a code change: only
// scenario 1's one-at-a-time 0 ms runs, this checkout's agentq and the other's interleaved in
// blocks of 10 runs with the in-process loop, then scenario 4's Redis cost of each, twice (this,
// other, other, this, on an emptied Redis each time); prints a table with the ratios and the spread of the blocks' ratios, writes
// bench/results/compare.json, not BENCHMARKS.md; BENCH_QUICK=1 makes it shorter),
// BENCH_SERVICE_ENV="NAME=value …" (settings for agentq's services, e.g. TRANSCRIPT_CACHE_MB=0),
// BENCH_REDIS_CAP=0.12 (scenario 5's cap on each Redis, a share of one core), BENCH_REDIS_AOF=no
// (the bench's own Redis without its AOF, to see what appending costs; does not write BENCHMARKS.md),
// BENCH_REDIS_CPU=1 (pins the bench's own Redis to that CPU; run the bench itself under
// `taskset -c 0` to give Redis a core of its own, so that the other processes do not slow it).
//
// Each scenario is a file of bench/scenarios/ (BENCH_COMPARE's is compare.mjs); what they run on
// is bench/lib/ (harness.mjs lists it), and the outputs are bench/lib/report.mjs.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { noiseWatch } from './lib/machine.mjs';
import { machineInfo } from './lib/machine-info.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { compareText, report } from './lib/report.mjs';
import { FANOUT, ROOT, ROUNDS, STEPS, TOOL_CALLS } from './lib/workload.mjs';
import { scenarioOverhead } from './scenarios/1-overhead.mjs';
import { scenarioThroughput } from './scenarios/2-throughput.mjs';
import { scenarioConcurrency } from './scenarios/3-concurrency.mjs';
import { scenarioRedis } from './scenarios/4-redis.mjs';
import { scenarioRedisBound } from './scenarios/5-redis-bound.mjs';
import { compare } from './scenarios/compare.mjs';
import { HEAP_FLAGS } from '../scripts/lib/services.mjs';

/** @import { CompareResults, Ctx, Results } from './lib/types.d.ts' */

const truthy = (/** @type {string | undefined} */ v) => /^(1|true|yes|on)$/i.test(v ?? '');
const QUICK = truthy(process.env.BENCH_QUICK);
/** @type {'stdio' | 'http'} */
const MCP = process.env.BENCH_MCP === 'http' ? 'http' : 'stdio';
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
const PROFILE = truthy(process.env.BENCH_PROFILE);
const COMPARE = process.env.BENCH_COMPARE ? resolve(process.env.BENCH_COMPARE) : null;
const MANY = Number(process.env.BENCH_RUNS) || (QUICK ? 100 : 1000);
/** Runs of each checkout under BENCH_COMPARE, in blocks of 10: with fewer, the p50 ratio's noise hides small changes. */
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
  redisBatch: QUICK ? 50 : 1000,
  redisBound: QUICK ? 100 : 1000,
};
const HTTP_CONCURRENCY = 64;
/** Repetitions of each many-runs measurement (the fastest is kept). */
const REPEAT = QUICK ? 1 : 2;

if (truthy(process.env.BENCH_REPORT_ONLY)) {
  // Renders BENCHMARKS.md and the chart again from the last full run on this machine.
  const file = join(ROOT, 'bench', 'results', 'latest.json');
  if (!existsSync(file)) {
    process.stderr.write(
      'bench: no bench/results/latest.json here: run `npm run bench` first (git keeps no results)\n',
    );
    process.exit(1);
  }
  const { files } = report(JSON.parse(readFileSync(file, 'utf8')), { write: true });
  process.stdout.write(
    `bench: wrote ${files.map((f) => f.replace(`${ROOT}/`, '')).join(', ')} from bench/results/latest.json\n`,
  );
  process.exit(0);
}

const built = (/** @type {string} */ root) =>
  ['api', 'agent-worker', 'tool-worker']
    .map((s) => join(root, 'services', s, 'dist', 'main.js'))
    .concat(join(root, 'packages/shared/dist'));
const missing = [
  ...built(ROOT),
  join(ROOT, 'packages/scripted-llm/dist/index.js'),
  ...(COMPARE ? built(COMPARE) : []),
].filter((f) => !existsSync(f));
if (missing.length) {
  process.stderr.write(`bench: ${missing.join(', ')} missing: run npm run build first (npm run bench does it)\n`);
  process.exit(1);
}

const T0 = Date.now();
const say = (s = '') => process.stdout.write(`${s}\n`);
const log = (/** @type {string} */ s) => say(`[${((Date.now() - T0) / 1000).toFixed(0).padStart(3)} s] ${s}`);
const want = (/** @type {number} */ n) => !ONLY || ONLY.has(String(n));

const redis = await startRedis();
const ctl = new Redis(redis.url, { maxRetriesPerRequest: null, connectionName: 'bench-ctl' });
const waiter = new Redis(redis.url, { maxRetriesPerRequest: null, connectionName: 'bench-wait' });
const redisProc = redis.pid ? [{ name: 'redis-server', pid: redis.pid }] : [];
const { foreign, noteForeign, quiet } = noiseWatch(log, redisProc);

/**
 * What every scenario and its helpers share: the options above, the Redis and its clients, the log, the noise watch.
 * @type {Ctx}
 */
const ctx = {
  QUICK,
  MCP,
  PROFILE,
  COMPARE_RUNS,
  SLOW_MS,
  SCALE_SLOTS,
  N,
  HTTP_CONCURRENCY,
  REPEAT,
  T0,
  log,
  redis,
  ctl,
  waiter,
  redisProc,
  noteForeign,
  quiet,
};

if (COMPARE) {
  /** @type {CompareResults} */
  let c;
  try {
    c = await compare(ctx, COMPARE);
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

/** @type {Results} */
const results = {
  quick: QUICK,
  startedAt: new Date(T0).toISOString(),
  machine: await machineInfo(ctl, redis),
  config: {
    repeat: REPEAT,
    serviceNodeOptions: process.env.BENCH_NODE_OPTIONS ?? null,
    heapFlags: HEAP_FLAGS,
    rounds: ROUNDS,
    fanout: FANOUT,
    steps: STEPS,
    toolCallsPerRun: TOOL_CALLS,
    mcpTransport: MCP,
    sizes: N,
    httpConcurrency: HTTP_CONCURRENCY,
    slowModelMs: SLOW_MS,
  },
};
/** @type {unknown} */
let failed = null;
try {
  if (want(1)) results.overhead = await scenarioOverhead(ctx);
  if (want(2)) results.throughput = await scenarioThroughput(ctx);
  if (want(3)) results.concurrency = await scenarioConcurrency(ctx);
  if (want(4)) results.redis = await scenarioRedis(ctx);
  if (want(5)) results.redisBound = await scenarioRedisBound(ctx);
} catch (err) {
  failed = err;
  process.stderr.write(`bench: ${err instanceof Error ? err.stack : String(err)}\n`);
} finally {
  ctl.disconnect();
  waiter.disconnect();
  await redis.stop();
}
results.durationS = (Date.now() - T0) / 1000;
results.foreign = foreign;
if (failed) process.exit(1);

const canonical =
  !QUICK &&
  !ONLY &&
  !process.env.BENCH_NODE_OPTIONS &&
  !process.env.BENCH_RUNS &&
  !process.env.BENCH_REDIS_AOF &&
  !process.env.BENCH_REDIS_CAP;
const out = report(results, { write: canonical });
say();
say(out.text);
const dir = join(ROOT, 'bench', 'results');
mkdirSync(dir, { recursive: true });
const jsonFile = join(dir, QUICK ? 'quick.json' : canonical ? 'latest.json' : 'partial.json');
writeFileSync(jsonFile, `${JSON.stringify(results, null, 2)}\n`);
say();
say(
  `bench: done in ${((Date.now() - T0) / 1000).toFixed(0)} s; wrote ${[jsonFile, ...out.files].map((f) => f.replace(`${ROOT}/`, '')).join(', ')}`,
);

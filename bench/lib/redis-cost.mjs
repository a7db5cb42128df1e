// @ts-check
// What a system asks of Redis over a window of runs: the commands Redis executed (INFO
// commandstats) and what each process sent (the client probes, bench/lib/redis-probe.mjs).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { submitter } from './batch.mjs';
import { cpuSnapshot, syscalls } from './machine.mjs';
import { sleep, tmpDir, until } from './procs.mjs';
import { waitCompleted } from './runs.mjs';
import { pool } from './stats.mjs';
import { STEPS } from './workload.mjs';

/**
 * @import { Redis } from 'ioredis'
 * @import { CommandStats, CpuSnapshot, Probe, ProcessCommands, RedisCost, RedisWindow, RunCtx, ScriptCost, Sizes, Stack } from './types.d.ts'
 * @typedef {{ stats: CommandStats, probes: Record<string, Probe>, cpu: CpuSnapshot, io: { reads: number, writes: number } | null, bytes: { in: number, aof: number } }} Snapshot
 */

/**
 * `INFO commandstats` as { name: { calls, usec } }.
 * @param {Redis | import('ioredis').Cluster} redis
 */
export async function commandStats(redis) {
  const text = await redis.info('commandstats');
  /** @type {CommandStats} */
  const out = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return out;
}

/**
 * Bytes Redis has taken in from its clients, and the size of its append-only file (0 without one).
 * @param {Redis} redis
 */
export async function redisBytes(redis) {
  const field = (/** @type {string} */ text, /** @type {string} */ name) =>
    Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  const [stats, persistence] = await Promise.all([redis.info('stats'), redis.info('persistence')]);
  return { in: field(stats, 'total_net_input_bytes'), aof: field(persistence, 'aof_current_size') };
}

/**
 * Signals every probed process to write its counters; resolves with them by pid.
 * @param {string} dir
 * @param {number[]} pids
 */
export async function readProbes(dir, pids) {
  const since = Date.now();
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  /** @type {Record<string, Probe>} */
  const out = {};
  await until(
    'the Redis probes',
    async () => {
      for (const pid of pids) {
        const f = join(dir, `${pid}.json`);
        if (!existsSync(f)) return false;
        const v = JSON.parse(readFileSync(f, 'utf8'));
        if (v.at < since) return false;
        out[pid] = v;
      }
      return true;
    },
    10_000,
    20,
  );
  return out;
}

/**
 * Commands and round trips of one window, from the server's stats and the clients' probes.
 * @param {Snapshot} s0
 * @param {Snapshot} s1
 * @param {Record<string, string>} names process names by pid
 * @param {{ runs: number, ownCommands?: Record<string, number>, extraClient?: (ProcessCommands & { name: string }) | null }} options
 * @returns {RedisWindow}
 */
function redisWindow(s0, s1, names, { runs, ownCommands = {}, extraClient = null }) {
  /** @type {CommandStats} */
  const server = {};
  for (const [k, v] of Object.entries(s1.stats)) {
    const calls = v.calls - (s0.stats[k]?.calls ?? 0) - (ownCommands[k] ?? 0);
    const usec = v.usec - (s0.stats[k]?.usec ?? 0);
    if (calls > 0 && !['info', 'config|resetstat'].includes(k)) server[k] = { calls, usec };
  }
  /** @type {Record<string, ProcessCommands>} */
  const byProcess = {};
  /** @type {Record<string, number>} */
  const clientCommands = {};
  for (const pid of Object.keys(s1.probes)) {
    const a = s0.probes[pid] ?? { commands: {}, trips: 0 };
    const b = s1.probes[pid];
    /** @type {Record<string, number>} */
    const cmds = {};
    for (const [k, v] of Object.entries(b.commands)) {
      const d = v - (a.commands[k] ?? 0);
      if (d > 0) {
        cmds[k] = d;
        clientCommands[k] = (clientCommands[k] ?? 0) + d;
      }
    }
    byProcess[names[pid] ?? pid] = {
      trips: b.trips - a.trips,
      commands: Object.values(cmds).reduce((x, y) => x + y, 0),
      byCommand: cmds,
    };
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
    // Redis's read and write system calls (what each round trip costs it besides the commands).
    redisReads: s1.io && s0.io ? s1.io.reads - s0.io.reads : null,
    redisWrites: s1.io && s0.io ? s1.io.writes - s0.io.writes : null,
    // What the clients sent, and what Redis appended to its AOF (which it also writes and syncs).
    bytesIn: s1.bytes.in - s0.bytes.in,
    aofBytes: s1.bytes.aof - s0.bytes.aof,
  };
}

/**
 * What a stack (started with `probeDir`) asks of Redis: N.redisSeq runs one at a time (an idle
 * system between runs: workers fetch by blocking; completion seen by polling ZCARD), then
 * N.redisBatch at once (a busy system).
 * @param {RunCtx & { N: Sizes }} ctx
 * @param {Stack} stack
 * @param {string} probeDir
 * @returns {Promise<RedisCost>}
 */
export async function redisCost(ctx, stack, probeDir) {
  const { ctl, quiet, redisProc, N, HTTP_CONCURRENCY } = ctx;
  const { submit, close } = await submitter(ctx, stack);
  const names = Object.fromEntries(stack.processes().map((p) => [p.pid, p.name]));
  // The bare client's submissions are not probed: one addStandardJob a run.
  const extraClient = (/** @type {number} */ runs) =>
    stack.kind === 'agentq'
      ? null
      : { name: 'bench (submits runs)', trips: runs, commands: runs, byCommand: { 'evalsha:addStandardJob': runs } };
  const completed = () => ctl.zcard(stack.completedKey);
  try {
    // Warm up: scripts loaded, connections open, JIT warm.
    const warm = await completed();
    await pool(10, 5, submit);
    await waitCompleted(ctl, stack, warm + 10 * STEPS, { timeoutMs: 60_000 });
    await sleep(300);
    await quiet(stack.processes());
    /** @returns {Promise<Snapshot>} */
    const snap = async () => ({
      stats: await commandStats(ctl),
      probes: await readProbes(probeDir, stack.servicePids()),
      cpu: cpuSnapshot(redisProc),
      io: syscalls(redisProc[0]?.pid),
      bytes: await redisBytes(ctl),
    });
    /** @param {number} runs @param {number} concurrency @param {number} everyMs */
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
      return redisWindow(s0, await snap(), names, {
        runs,
        ownCommands: { zcard: polls },
        extraClient: extraClient(runs),
      });
    };
    const sequential = await window(N.redisSeq, 1, 2);
    const batchWindow = await window(N.redisBatch, HTTP_CONCURRENCY, 25);
    // The same batch again with every command in the slow log: what each script costs. A window
    // of its own, since logging every command costs Redis CPU the windows above must not carry.
    const probes = await readProbes(probeDir, stack.servicePids());
    const slow = await slowLogged(ctl, () =>
      process.env.SLOW_SEQ ? window(N.redisSeq, 1, 2) : window(N.redisBatch, HTTP_CONCURRENCY, 25),
    );
    return { sequential, batch: batchWindow, scripts: scriptCosts(slow.entries, probes, slow.result.steps) };
  } finally {
    await close();
  }
}

/**
 * Runs `fn` with every command Redis executes in its slow log; returns fn's result and the entries.
 * @template T
 * @param {Redis} ctl
 * @param {() => Promise<T>} fn
 * @returns {Promise<{ result: T, entries: Array<[unknown, unknown, number, unknown[]]> }>}
 */
async function slowLogged(ctl, fn) {
  const before = /** @type {string[]} */ (await ctl.config('GET', 'slowlog-*'));
  await ctl.config('SET', 'slowlog-log-slower-than', '0', 'slowlog-max-len', '1000000');
  await ctl.slowlog('RESET');
  try {
    const result = await fn();
    return {
      result,
      entries: /** @type {Array<[unknown, unknown, number, unknown[]]>} */ (await ctl.slowlog('GET', '-1')),
    };
  } finally {
    await ctl.config('SET', .../** @type {[string, string]} */ (before));
    await ctl.slowlog('RESET');
  }
}

/**
 * Redis time per step by top-level command, scripts by their registered name (from the probes).
 * @param {Array<[unknown, unknown, number, unknown[]]>} entries the slow log's
 * @param {Record<string, Probe>} probes
 * @param {number} steps
 * @returns {ScriptCost[]}
 */
function scriptCosts(entries, probes, steps) {
  /** @type {Map<string, string>} */
  const names = new Map();
  for (const p of Object.values(probes))
    for (const [sha, name] of Object.entries(p.scripts ?? {})) names.set(sha, name);
  const own = new Set(['zcard', 'info', 'config', 'slowlog', 'client']);
  const byName = new Map();
  for (const [, , usec, args] of entries) {
    const cmd = String(args[0]).toLowerCase();
    if (own.has(cmd)) continue;
    const name =
      cmd === 'evalsha'
        ? `evalsha:${names.get(String(args[1])) ?? String(args[1]).slice(0, 8)}`
        : cmd === 'eval'
          ? 'eval:script'
          : cmd;
    const c = byName.get(name) ?? { calls: 0, usec: 0 };
    c.calls += 1;
    c.usec += Number(usec);
    byName.set(name, c);
  }
  const rows = [...byName].map(([name, c]) => ({
    name,
    callsPerStep: c.calls / steps,
    usecPerStep: c.usec / steps,
    usecPerCall: c.usec / c.calls,
  }));
  return rows.sort((a, b) => b.usecPerStep - a.usecPerStep);
}

/**
 * Empties the benchmark's own Redis (never BENCH_REDIS_URL's) and rewrites its AOF, before a
 * system's window: a Redis holding the previous systems' keys and a longer AOF is slower per
 * command, which would be charged to whichever system is measured last.
 * @param {Pick<RunCtx, 'redis' | 'ctl'>} ctx
 */
export async function emptyRedis({ redis, ctl }) {
  if (!redis.own) return;
  await ctl.flushall();
  const rewritten = async () => /aof_rewrite_in_progress:0/.test(await ctl.info('persistence'));
  // A rewrite may be under way already (a Redis 7 just started writes its first AOF so): wait for it.
  await until('an AOF rewrite already under way', rewritten, 30_000, 50);
  await ctl.bgrewriteaof().catch((/** @type {Error} */ err) => {
    if (!/already in progress/i.test(err.message)) throw err;
  });
  await until('the AOF rewrite', rewritten, 30_000, 50);
}

/**
 * Starts a stack with the Redis probe, measures its Redis cost, stops it.
 * @param {RunCtx & { N: Sizes }} ctx
 * @param {(probeDir: string) => Promise<Stack>} start
 */
export async function probedRedisCost(ctx, start) {
  const probeDir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-probe-')));
  const stack = await start(probeDir);
  try {
    return await redisCost(ctx, stack, probeDir);
  } finally {
    await stack.stop();
    rmSync(probeDir, { recursive: true, force: true });
  }
}

// @ts-check
// Many runs at once: submitted together to a system (or started together in the in-process
// loop), timed from the first submission to the last completion, repeated and the fastest kept.
import { cpuDelta, cpuSnapshot, foreignShare } from './machine.mjs';
import { agentqRunTimes, bareClient, bareRunTimes, submitAgentqRun, waitCompleted } from './runs.mjs';
import { pool, summary } from './stats.mjs';
import { STEPS, TOOL_CALLS } from './workload.mjs';

/**
 * @import { Measurement, RunCtx, RunTimes, Stack, Window } from './types.d.ts'
 * @typedef {Awaited<ReturnType<typeof import('./start-inproc.mjs').startInproc>>} Inproc
 */

/**
 * How runs are submitted to a stack and timed afterwards: agentq's through its API, bare flows by adding their first job.
 * @param {Pick<RunCtx, 'ctl' | 'redis'>} ctx
 * @param {Stack} stack
 * @returns {Promise<{ submit: () => Promise<string>, times: (ids: string[]) => Promise<RunTimes[]>, close: () => Promise<void> }>}
 */
export async function submitter({ ctl, redis }, stack, model = 'bench') {
  if (stack.kind === 'agentq')
    return {
      submit: () => submitAgentqRun(/** @type {import('./types.d.ts').AgentqStack} */ (stack), model),
      times: (ids) => agentqRunTimes(ctl, stack.prefix, ids),
      close: async () => {},
    };
  const client = await bareClient(redis.url, stack);
  return {
    submit: async () => {
      const id = client.newId();
      // The BullMQ loop calls the model named in the run's first job (bare flows ignore it).
      await client.add(id, model === 'bench' ? undefined : model);
      return id;
    },
    times: (ids) => bareRunTimes(ctl, stack.prefix, ids),
    close: () => client.close(),
  };
}

/**
 * The fastest of repeated measurements (interference from other processes only ever slows a run down), with every one's figures.
 * @param {Window[]} all
 * @returns {Measurement}
 */
const bestOf = (all) => ({
  ...all.reduce((a, b) => (b.runsPerSec > a.runsPerSec ? b : a)),
  repetitions: all.map((r) => ({
    runsPerSec: r.runsPerSec,
    wallMs: r.wallMs,
    p50: r.latency.p50,
    p99: r.latency.p99,
    foreignShare: r.foreignShare,
  })),
});
/** @param {string} label @param {number} i @param {number} repeat */
export const nth = (label, i, repeat) => (repeat > 1 ? `${label} (#${i + 1})` : label);

/**
 * n runs submitted at once, REPEAT times on the same processes; per-run times from what the system stored.
 * @param {RunCtx} ctx
 * @param {Stack} stack
 * @param {number} n
 * @param {{ label: string, model?: string }} options
 */
export async function batch(ctx, stack, n, { label, model }) {
  const windows = await batchWindows(ctx, stack, n, { model });
  try {
    /** @type {Window[]} */
    const all = [];
    for (let i = 0; i < ctx.REPEAT; i++) all.push(await windows.once(nth(label, i, ctx.REPEAT)));
    return bestWindow(all, label);
  } finally {
    await windows.close();
  }
}

/**
 * Windows of n runs submitted at once to a warmed-up stack, one per once(label), so that another
 * system's windows can alternate with them; close() when done.
 * @param {RunCtx} ctx
 * @param {Stack} stack
 * @param {number} n
 * @param {{ model?: string }} options
 */
export async function batchWindows(ctx, stack, n, { model }) {
  const { submit, times, close } = await submitter(ctx, stack, model);
  // Warm up (JIT, connections), then each window is timed from its first submission to its last completion.
  const warm = Math.min(20, n);
  const before = await ctx.ctl.zcard(stack.completedKey);
  await pool(warm, 10, submit);
  await waitCompleted(ctx.ctl, stack, before + warm * STEPS, { timeoutMs: 60_000 });
  return { once: (/** @type {string} */ label) => batchOnce(ctx, stack, n, { submit, times, label }), close };
}

/**
 * The best of a system's windows, with the label of the measurement.
 * @param {Window[]} all
 * @param {string} label
 */
export const bestWindow = (all, label) => ({ ...bestOf(all), label });

/**
 * @param {RunCtx} ctx
 * @param {Stack} stack
 * @param {number} n
 * @param {{ submit: () => Promise<string>, times: (ids: string[]) => Promise<RunTimes[]>, label: string }} how
 * @returns {Promise<Window>}
 */
async function batchOnce(
  { ctl, quiet, redisProc, noteForeign, log, HTTP_CONCURRENCY },
  stack,
  n,
  { submit, times, label },
) {
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
  /** @type {Record<string, number>} */
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
  log(
    `  ${label}: ${n} runs in ${(wallMs / 1000).toFixed(2)} s → ${res.runsPerSec.toFixed(1)} runs/s, p50 ${res.latency.p50.toFixed(0)} ms, p99 ${res.latency.p99.toFixed(0)} ms ${JSON.stringify(statuses)}`,
  );
  return res;
}

/**
 * n in-process runs at once (one process, no queue), `repeat` times: per-run latency, runs/s, CPU.
 * @param {RunCtx} ctx
 * @param {Inproc} inproc
 * @param {number} n
 * @param {{ model: string, label: string, repeat: number }} options
 */
export async function inprocBatch(ctx, inproc, n, { model, label, repeat }) {
  /** @type {Window[]} */
  const all = [];
  for (let i = 0; i < repeat; i++) all.push(await inprocOnce(ctx, inproc, n, { model, label: nth(label, i, repeat) }));
  return bestOf(all);
}

/**
 * One window of n in-process runs at once.
 * @param {RunCtx} ctx
 * @param {Inproc} inproc
 * @param {number} n
 * @param {{ model: string, label: string }} options
 * @returns {Promise<Window>}
 */
export async function inprocOnce({ quiet, redisProc, noteForeign, log }, inproc, n, { model, label }) {
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
  const res = {
    label,
    n,
    wallMs,
    runsPerSec: (n * 1000) / wallMs,
    toolCallsPerSec: (n * TOOL_CALLS * 1000) / wallMs,
    latency: summary(lat),
    cpuMs: { ...cpuMs, 'in-process loop (bench)': self },
    foreignShare: foreignShare(cpu0, cpu1),
  };
  noteForeign(label, res.foreignShare);
  log(
    `  ${label}: ${n} runs in ${(wallMs / 1000).toFixed(2)} s → ${res.runsPerSec.toFixed(1)} runs/s, p50 ${res.latency.p50.toFixed(0)} ms, p99 ${res.latency.p99.toFixed(0)} ms`,
  );
  return res;
}

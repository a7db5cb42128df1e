#!/usr/bin/env node
// @ts-check
// Where the time of an agentq run goes, one run at a time (the critical path of scenario 1):
// runs N runs (after 20 to warm up) on a fresh stack, then averages, over all but the first 10,
// the phases of each model step and tool round from the run's event stream (Redis server time)
// and the BullMQ job records (timestamp, processedOn, finishedOn: the workers' clocks, same
// machine). Also prints each process's CPU per run (all its threads: JIT and GC included).
// BARE=1 does the same for the bare-BullMQ baseline (no events there: job records only), LOOP=1
// for the BullMQ-loop baseline (bare flows whose processors call the model and the MCP server).
//
//   npm run build && N=200 node bench/timeline.mjs      (ROWS=1 also lists the last run's timeline;
//   V8_HEAP=1 runs the services without the shipped heap flags)
import { Redis } from 'ioredis';
import { cpuMs } from './lib/procs.mjs';
import {
  agentqOnce,
  bareClient,
  FANOUT,
  jobIds,
  QUEUES,
  ROUNDS,
  startAgentq,
  startBare,
  startRedis,
} from './lib/harness.mjs';

/** @import { AgentqStack, Stack } from './lib/types.d.ts' */

const N = Number(process.env.N ?? 100);
const redis = await startRedis();
const ctl = new Redis(redis.url);
const waiter = new Redis(redis.url);
const LOOP = Boolean(process.env.LOOP);
const BARE = Boolean(process.env.BARE) || LOOP;
/** @type {AgentqStack | null} */
const agentq = BARE
  ? null
  : await startAgentq(ctl, redis.url, {
      mcpTransport: process.env.BENCH_MCP ?? 'stdio',
      v8Heap: Boolean(process.env.V8_HEAP),
    });
/** @type {Stack} */
const stack =
  agentq ?? (await startBare(ctl, redis.url, { work: LOOP, mcpTransport: process.env.BENCH_MCP ?? 'stdio' }));
const bare = agentq ? null : await bareClient(redis.url, stack);
/**
 * One run, start to end; resolves with its id.
 * @returns {Promise<string>}
 */
const once = () => (bare ? bare.once() : agentqOnce(waiter, /** @type {AgentqStack} */ (agentq)));
const ms = (/** @type {string | undefined} */ t) => Number(t);
const eventTime = (/** @type {string} */ id) => Number(id.split('-')[0]);
try {
  for (let i = 0; i < 20; i++) await once();
  const procs = stack.processes();
  const c0 = procs.map((p) => cpuMs(p.pid) ?? NaN);
  const times = [];
  const ids = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    ids.push(await once());
    times.push(performance.now() - t);
  }
  for (const [i, p] of procs.entries())
    console.log(`${p.name}: ${(((cpuMs(p.pid) ?? NaN) - c0[i]) / N).toFixed(2)} ms CPU per run`);
  times.sort((a, b) => a - b);
  console.log(
    `run p50 ${times[Math.floor(N / 2)].toFixed(1)} ms over ${N} (${BARE ? 'first step job added → last one completed event seen' : 'submit → terminal event seen'})\n`,
  );

  /** @type {Record<string, number[]>} */
  const phases = {};
  /** @param {string} k @param {number} v */
  const add = (k, v) => {
    phases[k] ??= [];
    phases[k].push(v);
  };
  /** @param {string} queue @param {string} id */
  const job = (queue, id) => ctl.hgetall(`${stack.queuePrefix ?? stack.prefix}:${queue}:${id}`);
  /** @type {Array<[number, string]>} */
  let rows = [];
  for (const runId of ids.slice(Math.min(10, N - 1))) {
    /** @type {Record<string, number[]>} */
    const at = {};
    rows = [];
    if (agentq) {
      for (const [id, f] of await ctl.xrange(agentq.runKeys(runId).events, '-', '+')) {
        const type = f[f.indexOf('type') + 1];
        at[type] ??= [];
        at[type].push(eventTime(id));
        rows.push([eventTime(id), `event ${type}`]);
      }
    }
    const first = await job(QUEUES.agent, jobIds.agentTurn(runId, 0));
    const t0 = BARE ? ms(first.timestamp) : at['run.queued'][0];
    for (let d = 0; d <= ROUNDS; d++) {
      const stepJob = await job(QUEUES.agent, jobIds.agentTurn(runId, d));
      rows.push([ms(stepJob.processedOn), `step ${d} job starts`], [ms(stepJob.finishedOn), `step ${d} job finished`]);
      if (d === 0) add(`0  ${BARE ? 'added' : 'queued'} → first step job starts`, ms(stepJob.processedOn) - t0);
      // The bare processor does no work between starting and fanning out: its step is C alone (with
      // LOOP=1, C holds the model call).
      const completed = BARE ? ms(stepJob.processedOn) : at['step.completed'][d];
      if (!BARE) {
        const started = at['step.started'][d];
        add('A  step job starts → step.started (load the step)', started - ms(stepJob.processedOn));
        add('B  step.started → step.completed (model call + commit)', completed - started);
      }
      if (d === ROUNDS) {
        if (BARE) add('run: added → last step job finished', ms(stepJob.finishedOn) - t0);
        else {
          add('Z  last step.completed → run.completed', at['run.completed'][0] - completed);
          add('run: queued → completed', at['run.completed'][0] - t0);
        }
        continue;
      }
      add(
        `C  ${BARE ? 'step job starts' : 'step.completed'} → step job finished (the round's jobs added + moveToFinished)`,
        ms(stepJob.finishedOn) - completed,
      );
      let lastDone = 0;
      // agentq runs the round's calls in one job; the baselines have a job per call.
      const toolJobs = BARE
        ? Array.from({ length: FANOUT }, (_, i) => [`${d}.${i}`, jobIds.toolCall(runId, d, i)])
        : [[`${d}`, jobIds.toolCall(runId, d, 0)]];
      for (const [label, id] of toolJobs) {
        const tool = await job(QUEUES.tool, id);
        rows.push([ms(tool.processedOn), `tool ${label} starts`], [ms(tool.finishedOn), `tool ${label} finished`]);
        add('D  tool job added → starts', ms(tool.processedOn) - ms(tool.timestamp));
        add(
          `E  tool job starts → finished${BARE ? '' : ' (the round: begin, MCP call, complete of each call)'}`,
          ms(tool.finishedOn) - ms(tool.processedOn),
        );
        lastDone = Math.max(lastDone, ms(tool.finishedOn));
      }
      const next = await job(QUEUES.agent, jobIds.agentTurn(runId, d + 1));
      add('H  last tool job finished → next step job starts', ms(next.processedOn) - lastDone);
      add(
        `T  tool round: ${BARE ? 'step job starts' : 'step.completed'} → next step job starts`,
        ms(next.processedOn) - completed,
      );
    }
    rows = rows.map(([t, what]) => [t - t0, what]);
  }
  console.log('phase (mean over runs, ms; ms-resolution clocks)');
  for (const [k, v] of Object.entries(phases).sort())
    console.log(`  ${k.padEnd(72)} ${(v.reduce((a, b) => a + b, 0) / v.length).toFixed(2)}`);
  if (process.env.ROWS) {
    console.log('\nthe last run (ms after run.queued):');
    for (const [t, what] of rows.sort((a, b) => a[0] - b[0])) console.log(`  ${String(t).padStart(4)}  ${what}`);
  }
} finally {
  await bare?.close();
  await stack.stop();
  ctl.disconnect();
  waiter.disconnect();
  await redis.stop();
}

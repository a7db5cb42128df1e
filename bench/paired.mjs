#!/usr/bin/env node
// @ts-check
// `npm run bench:paired`: two systems measured at the same time, each on a Redis of its own
// capped at the same share of a core (bench/lib/paired.mjs, as scenario 5 of `npm run bench`
// measures agentq against each baseline), for as many windows as asked and any two systems,
// another built checkout of agentq among them. Each window starts from emptied Redis servers
// and fresh stacks; N runs are submitted at once to each (loopback; everything stops by itself).
// Env: PAIRED_SYSTEMS=agentq,loop (agentq, loop, bare, or the path of another built checkout of
// agentq: an A/B of a code change), PAIRED_CAP=0.12 (each Redis's share of one core: low enough
// that both stay Redis-bound while their workers share the host's cores), PAIRED_WINDOWS=4,
// PAIRED_RUNS=1000 (runs per window per system), BENCH_QUICK=1 (2 windows of 200 runs).
import { resolve } from 'node:path';
import { closeSides, pairedSide, pairedWindow } from './lib/paired.mjs';
import { startAgentq } from './lib/start-agentq.mjs';
import { fmt, textTable } from './lib/stats.mjs';
import { systemStarts } from './lib/systems.mjs';

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const SYSTEMS = (process.env.PAIRED_SYSTEMS ?? 'agentq,loop').split(',').filter(Boolean);
const CAP = Number(process.env.PAIRED_CAP ?? 0.12);
const WINDOWS = Number(process.env.PAIRED_WINDOWS ?? (QUICK ? 2 : 4));
const RUNS = Number(process.env.PAIRED_RUNS ?? (QUICK ? 200 : 1000));
/** @type {Record<string, string>} */
const NAMES = { agentq: 'agentq', loop: 'BullMQ loop', bare: 'bare BullMQ' };
if (SYSTEMS.length !== 2) throw new Error('PAIRED_SYSTEMS: name two systems, e.g. agentq,loop');
if (!(CAP > 0 && CAP <= 1)) throw new Error('PAIRED_CAP: a share of one core, above 0 and at most 1');

/**
 * How to start a system on a Redis: one of systemStarts', or agentq of another built checkout.
 * @param {string} system
 * @returns {import('./lib/paired.mjs').Side['start']}
 */
function starter(system) {
  if (system === 'agentq' || system === 'loop' || system === 'bare') return (ctx) => systemStarts(ctx)[system]();
  const root = resolve(system);
  return (ctx) => startAgentq(ctx.ctl, ctx.redis.url, { root, tag: 'other' });
}
const label = (/** @type {string} */ system) => NAMES[system] ?? `agentq of ${system}`;

/** @type {import('./lib/paired.mjs').Side[]} */
const sides = [];
try {
  for (const system of SYSTEMS) sides.push(await pairedSide(system, starter(system)));
  console.log(
    `bench:paired: ${label(SYSTEMS[0])} and ${label(SYSTEMS[1])} at the same time, each on a Redis capped at ${fmt(CAP * 100)} % of a core, ${RUNS} runs at once each, ${WINDOWS} windows`,
  );
  for (let w = 0; w < WINDOWS; w++) {
    const [a, b] = await pairedWindow(sides, { cap: CAP, runs: RUNS });
    console.log(
      `  window ${w + 1}: ${[a, b].map((x, i) => `${label(sides[i].system)} ${fmt(x.runsPerSec)} runs/s, Redis ${fmt(x.redisUsPerStep)} µs a step, busy ${fmt(x.redisBusy * 100)} %`).join('; ')}; ratio ${fmt(a.runsPerSec / b.runsPerSec)}×`,
    );
  }
  const mean = (/** @type {number[]} */ xs) => xs.reduce((n, x) => n + x, 0) / xs.length;
  const ratios = sides[0].windows.map((w, i) => w.runsPerSec / sides[1].windows[i].runsPerSec);
  const rows = sides.map((s) => [
    label(s.system),
    fmt(mean(s.windows.map((w) => w.runsPerSec))),
    fmt(mean(s.windows.map((w) => w.redisUsPerStep))),
    `${fmt(Math.min(...s.windows.map((w) => w.redisBusy)) * 100)} %`,
  ]);
  console.log(`\n${textTable(['system', 'runs/s (mean)', 'Redis µs a step (mean)', 'Redis busy (lowest)'], rows)}`);
  console.log(
    `\n${label(SYSTEMS[0])} against ${label(SYSTEMS[1])}, window by window: ${ratios.map((r) => `${fmt(r)}×`).join(', ')}; mean ${fmt(mean(ratios))}×, lowest ${fmt(Math.min(...ratios))}×.`,
  );
  const underCap = sides.flatMap((s) => s.windows).some((w) => w.redisBusy < 0.95);
  if (underCap)
    console.log(
      'A Redis was busy less than 95 % of its cap in some window: something else limited that system there (lower PAIRED_CAP).',
    );
  const unfinished = sides
    .flatMap((s) => s.windows)
    .some((w) => Object.keys(w.statuses ?? {}).some((k) => k !== 'completed'));
  if (unfinished) console.log('Some runs did not complete: see the statuses above.');
} finally {
  await closeSides(sides);
}

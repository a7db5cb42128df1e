// @ts-check
// BENCH_COMPARE's table for the terminal.
import { fmt, pct, quantile, textTable } from './stats.mjs';

/**
 * @import { CompareResults, RedisWindow } from './types.d.ts'
 * @typedef {'this' | 'other'} Side
 */

/**
 * BENCH_COMPARE's table: agentq of this checkout against the other one's, with their ratio.
 * @param {CompareResults} c
 */
export function compareText(c) {
  const T = c.steps;
  /**
   * @template V
   * @param {(k: Side) => V} f
   * @returns {[V, V]}
   */
  const both = (f) => [f('this'), f('other')];
  /** @param {(k: Side, p: 'p50' | 'p90') => number} f */
  const q = (f) => /** @type {const} */ (['p50', 'p90']).map((p) => both((k) => f(k, p)));
  /**
   * @param {string} label
   * @param {Array<[number, number]>} quantiles p50 then p90, each this and other
   */
  const row = (label, [[a50, b50], [a90, b90]]) => [
    label,
    `${fmt(a50)} / ${fmt(a90)}`,
    `${fmt(b50)} / ${fmt(b90)}`,
    `${fmt(a50 / b50)} / ${fmt(a90 / b90)}`,
  ];
  const rows = [
    row(
      'run, 0 ms model, one at a time, p50 / p90 (ms)',
      q((k, p) => c.latency[k][p]),
    ),
    row(
      `overhead per step, (run − in-process) ÷ ${T}, p50 / p90 (ms)`,
      q((k, p) => (c.latency[k][p] - c.latency.inproc[p]) / T),
    ),
  ];
  // Each checkout's Redis cost was measured twice (this, other, other, this): the mean of the two,
  // and each measurement in brackets.
  const windows = (/** @type {Side} */ k) => [c.redis[k]].flat();
  for (const mode of /** @type {const} */ (['sequential', 'batch'])) {
    const label = mode === 'sequential' ? 'one at a time' : `${windows('this')[0][mode].runs} at once`;
    /** @param {Side} k @param {(w: RedisWindow) => number} f */
    const each = (k, f) => windows(k).map((w) => f(w[mode]) / w[mode].steps);
    const mean = (/** @type {number[]} */ xs) => xs.reduce((x, y) => x + y, 0) / xs.length;
    /** @param {string} name @param {(w: RedisWindow) => number} f */
    const measure = (name, f) => {
      const [a, b] = both((k) => each(k, f));
      const cell = (/** @type {number[]} */ xs) =>
        `${fmt(mean(xs))}${xs.length > 1 ? ` (${xs.map(fmt).join(', ')})` : ''}`;
      rows.push([`${name}, ${label}`, cell(a), cell(b), fmt(mean(a) / mean(b))]);
    };
    measure('Redis commands per step (incl. inside Lua)', (w) => w.serverCommands);
    measure('round trips per step', (w) => w.trips);
    measure('Redis CPU per step (µs)', (w) => w.redisCpuMs * 1000);
    measure("Redis's read + write system calls per step", (w) => (w.redisReads ?? NaN) + (w.redisWrites ?? NaN));
  }
  const { inproc } = c.latency;
  // The ratio of this's and other's p50 block by block: its spread is the noise of the table's ratios.
  const blockRatios = Array.from({ length: c.blocks }, (_, b) => {
    const p50 = (/** @type {Side} */ k) => quantile(c.times[k].slice(b * c.perBlock, (b + 1) * c.perBlock), 0.5);
    return p50('this') / p50('other');
  }).filter(Number.isFinite);
  const spread = [0.25, 0.5, 0.75].map((p) => fmt(quantile(blockRatios, p)));
  return [
    `this:  ${c.commits.this} (${c.roots.this})`,
    `other: ${c.commits.other} (${c.roots.other})`,
    `${c.latency.this.n} runs each, interleaved in ${c.blocks} blocks with the in-process loop (p50 / p90 ${fmt(inproc.p50)} / ${fmt(inproc.p90)} ms); MCP over ${c.mcpTransport}`,
    ...(c.foreign ?? []).map((f) => `other processes used ${pct(f.share)} of the machine during "${f.label}"`),
    '',
    textTable(['measure', 'this', 'other', 'this ÷ other'], rows),
    '',
    `this ÷ other of each block's p50 run: median ${spread[1]}, middle half ${spread[0]}–${spread[2]} (${blockRatios.length} blocks)`,
  ].join('\n');
}

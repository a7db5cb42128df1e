// @ts-check
// The benchmark's outputs: a table for the terminal, BENCHMARKS.md and an SVG chart. The figures
// come from derive.mjs, the tables' rows from tables.mjs, the page from markdown.mjs and the
// chart from chart.mjs; BENCH_COMPARE's table is compare-text.mjs.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chart } from './chart.mjs';
import { derive } from './derive.mjs';
import { markdown } from './markdown.mjs';
import { pct, textTable } from './stats.mjs';
import { CPU_COLUMNS, cpuTable, redisBreakdown, summaryRows } from './tables.mjs';
import { ROOT } from './workload.mjs';

/** @import { Results } from './types.d.ts' */

// The parts test/process/bench.test.ts judges, from the module it reads them from.
export { chart, derive, markdown };
export { compareText } from './compare-text.mjs';

/**
 * Builds the terminal text, and (write) BENCHMARKS.md and bench/results/chart.svg.
 * @param {Results} r
 * @param {{ write: boolean }} options
 */
export function report(r, { write }) {
  const d = derive(r);
  r.derived = d;
  const rows = summaryRows(r, d);
  let text = textTable(['#', 'measure', 'agentq', 'baselines', 'ratio'], rows);
  const noisy = (r.foreign ?? []).filter((f) => f.share > 0.1);
  if (noisy.length)
    text += `\n\nWarning: other processes used more than 10 % of the machine during: ${noisy.map((f) => `${f.label} (${pct(f.share)})`).join('; ')}`;
  text += `\n\nTargets:\n${d.targets.map((t) => `  [${t.ok ? 'met' : 'NOT met'}] ${t.name}: ${t.value}`).join('\n')}`;
  for (const t of r.throughput ?? [])
    text += `\n\nCPU ms per run by process, throughput with ${t.workers} agent-worker(s):\n${textTable(CPU_COLUMNS, cpuTable(t))}`;
  if (r.redis) {
    const br = redisBreakdown(r, 'batch');
    text += `\n\nCommands sent per step (client side, ${r.redis.agentq.batch.runs} runs at once):\n${textTable(['command', 'agentq', 'bare BullMQ'], br.sent)}`;
    text += `\n\nRound trips and commands per step by process:\n${textTable(['system', 'process', 'round trips', 'commands'], br.procs)}`;
  }
  /** @type {string[]} */
  const files = [];
  if (write) {
    const dir = join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const svg = join(dir, 'chart.svg');
    writeFileSync(svg, chart(r, d));
    files.push(svg);
    const md = join(ROOT, 'BENCHMARKS.md');
    writeFileSync(md, markdown(r, d));
    files.push(md);
  }
  return { text, files };
}

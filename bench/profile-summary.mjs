#!/usr/bin/env node
// @ts-check
// Where a service spent its CPU, from a V8 .cpuprofile (BENCH_PROFILE=1 npm run bench writes
// them to bench/results/profiles): self time by package and by function.
//
//   node bench/profile-summary.mjs <file.cpuprofile> [top=25]
//
// Samples are counted, not weighted by their time deltas: on a busy 2-core machine a process
// is often descheduled, and V8 then records one sample with a long delta when it runs again,
// which would charge the wait to whatever ran last (typically a socket write).
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs <file.cpuprofile> [top]\n');
  process.exit(2);
}
const top = Number(topArg) || 25;
/**
 * @typedef {{ id: number, callFrame: { functionName: string, url: string, lineNumber: number } }} ProfileNode
 * @type {{ nodes: ProfileNode[], samples: number[] }}
 */
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
/** @type {Map<number, number>} */
const hits = new Map();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);

const where = (/** @type {ProfileNode} */ n) =>
  n.callFrame.url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(/^.*\/(services|packages)\//, '$1/');
const pkgOf = (/** @type {ProfileNode} */ n) => {
  const url = n.callFrame.url;
  if (!url)
    return n.callFrame.functionName.startsWith('(') ? n.callFrame.functionName : '(native: syscalls, GC helpers, …)';
  const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith('node:')) return url.replace(/^node:internal\/(deps\/)?/, 'node:');
  const s = /\/(services|packages)\/([^/]+)\//.exec(url);
  return s ? `${s[1]}/${s[2]}` : url;
};

/** @type {Map<string, number>} */
const byPkg = new Map();
/** @type {Map<string, number>} */
const byFn = new Map();
let total = 0;
let idle = 0;
for (const [id, count] of hits) {
  const n = nodes.get(id);
  total += count;
  if (!n) continue;
  if (n.callFrame.functionName === '(idle)') {
    idle += count;
    continue;
  }
  const p = pkgOf(n);
  byPkg.set(p, (byPkg.get(p) ?? 0) + count);
  const f = `${n.callFrame.functionName || '(anonymous)'}  ${where(n)}:${n.callFrame.lineNumber + 1}`;
  byFn.set(f, (byFn.get(f) ?? 0) + count);
}
const busy = total - idle;
const show = (/** @type {Map<string, number>} */ map) =>
  [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => `${((100 * v) / busy).toFixed(1).padStart(5)} %  ${k}`)
    .join('\n');
process.stdout.write(
  `${file}\n${total} samples, ${((100 * idle) / total).toFixed(0)} % idle; shares below are of the busy samples\n\nby package:\n${show(byPkg)}\n\nby function (self):\n${show(byFn)}\n`,
);

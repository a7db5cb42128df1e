// The benchmark's outputs: a table for the terminal, BENCHMARKS.md and an SVG chart.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { ROOT } from './harness.mjs';
import { barChartSVG } from './svg-chart.mjs';
import { fmt, mdTable, quantile, textTable } from './stats.mjs';

const pkgVersion = (name) => {
  try {
    return JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
};

/** The commit a checkout is at, and whether tracked files differ from it. */
export function commitOf(root) {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' }).trim();
    return dirty ? `${commit} (with uncommitted changes)` : commit;
  } catch {
    return '?';
  }
}

/** The machine and software the numbers come from. */
export async function machineInfo(ctl, redis) {
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? '?';
  const server = await ctl.info('server');
  const commit = commitOf(ROOT);
  return {
    nproc: os.availableParallelism(),
    cpu,
    ramGiB: os.totalmem() / 2 ** 30,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    redis: /redis_version:(\S+)/.exec(server)?.[1] ?? '?',
    redisSetup: redis.own ? 'own redis-server on a free loopback port, AOF on (appendfsync everysec), no RDB' : `external (${redis.url}), unique key prefix`,
    bullmq: pkgVersion('bullmq'),
    ioredis: pkgVersion('ioredis'),
    mcpSdk: pkgVersion('@modelcontextprotocol/sdk'),
    openai: pkgVersion('openai'),
    commit,
  };
}

const ms = (v) => `${fmt(v)} ms`;
const x = (v) => `${fmt(v, 2)}×`;
const pct = (v) => `${fmt(v * 100, 3)} %`;

/** Numbers derived from the raw results, and the targets judged on them. */
export function derive(r) {
  const d = { targets: [] };
  const T = r.config.steps;
  if (r.overhead) {
    const o = r.overhead;
    d.overheadPerStep = { agentq: (o.agentq.p50 - o.inproc.p50) / T, bare: o.bare.p50 / T };
    d.overheadPerStep.ratio = d.overheadPerStep.agentq / d.overheadPerStep.bare;
    d.overheadPerStepP99 = { agentq: (o.agentq.p99 - o.inproc.p99) / T, bare: o.bare.p99 / T };
    d.slowAdded = { perStepMs: (o.slow.agentq.p50 - o.slow.inproc.p50) / T };
    d.slowAdded.share = d.slowAdded.perStepMs / o.slow.modelMs;
    d.slowAdded.shareFrom0ms = d.overheadPerStep.agentq / o.slow.modelMs;
    // agentq's overhead split: the queue (bare), model and tools in worker processes, agentq's own.
    d.loopPerStep = (o.loop.p50 - o.inproc.p50) / T;
    d.split = { workers: (o.loop.p50 - o.bare.p50 - o.inproc.p50) / T, agentq: (o.agentq.p50 - o.loop.p50) / T };
    d.targets.push({ name: 'per-step overhead ≤ 1.5× bare BullMQ flows', value: `${ms(d.overheadPerStep.agentq)} vs ${ms(d.overheadPerStep.bare)} = ${x(d.overheadPerStep.ratio)}`, ok: d.overheadPerStep.ratio <= 1.5 });
    d.targets.push({
      name: `durability adds < 2 % to a ${o.slow.modelMs} ms model step`,
      value: `${pct(d.slowAdded.share)} measured at ${o.slow.modelMs} ms (${ms(d.slowAdded.perStepMs)} per step); ${pct(d.slowAdded.shareFrom0ms)} from the 0 ms overhead`,
      ok: Math.max(d.slowAdded.share, d.slowAdded.shareFrom0ms) < 0.02,
    });
  }
  if (r.throughput) {
    d.throughput = r.throughput.map((t) => {
      const ratio = t.agentq.runsPerSec / t.bare.runsPerSec;
      // A queue that cost nothing would still use bare + in-process CPU a run: the best ratio this machine allows.
      const ceiling = cpuPerRun(t.bare) / (cpuPerRun(t.bare) + cpuPerRun(t.inproc));
      d.targets.push({
        name: `throughput ≥ 0.5× bare BullMQ (aim 0.7×), ${t.workers} agent-worker${t.workers > 1 ? 's' : ''}`,
        value: `${fmt(t.agentq.runsPerSec)} vs ${fmt(t.bare.runsPerSec)} runs/s = ${x(ratio)}${ratio >= 0.7 ? ' (aim met)' : ratio >= 0.5 ? ' (aim 0.7× not met)' : ''}; a queue that cost nothing could reach ${x(ceiling)} on this machine`,
        ok: ratio >= 0.5,
      });
      return { ratio, ceiling };
    });
  }
  if (r.concurrency) {
    const c = r.concurrency;
    const big = c.agentq[c.sizes.at(-1)];
    d.concurrencyRatio = big.wallMs / c.idealMs;
    d.targets.push({ name: `${c.sizes.at(-1)} concurrent runs at ${c.modelMs} ms within 1.2× the ideal (${c.idealMs / 1000} s)`, value: `${fmt(big.wallMs / 1000)} s = ${x(d.concurrencyRatio)} (in-process loop: ${fmt(c.inproc[c.sizes.at(-1)].wallMs / 1000)} s)`, ok: d.concurrencyRatio <= 1.2 });
    const agentPeak = (mem) => Math.max(...mem.filter((m) => m.name.startsWith('agent-worker')).map((m) => m.peak));
    const peak = agentPeak(c.memory);
    const v8Note = `; ${fmt(agentPeak(c.v8Defaults.memory))} MB with V8's default heap sizing (then ${fmt(c.v8Defaults.agentq.wallMs / 1000)} s for the ${c.sizes.at(-1)} runs)`;
    d.targets.push({ name: 'agent-worker peak RSS < 300 MB', value: `${fmt(peak)} MB (VmHWM, ${c.sizes.at(-1)} runs in flight, shipped heap flags "${c.heapFlags}")${v8Note}`, ok: peak < 300 });
  }
  if (r.redis) {
    const per = (w) => ({ commands: w.serverCommands / w.steps, trips: w.trips / w.steps, cpuUs: (w.redisCpuMs * 1000) / w.steps });
    d.redis = Object.fromEntries(['sequential', 'batch'].map((mode) => [mode, { agentq: per(r.redis.agentq[mode]), bare: per(r.redis.bare[mode]) }]));
  }
  return d;
}

/** " (best of 2: 85.0, 74.7)" for a measurement that was repeated. */
const reps = (m, f = (v) => fmt(v.runsPerSec)) => (m?.repetitions?.length > 1 ? ` (best of ${m.repetitions.length}: ${m.repetitions.map(f).join(', ')})` : '');
/** A wall time in seconds, with its repetitions. */
const secs = (m) => `${fmt(m.wallMs / 1000)} s${reps(m, (v) => fmt(v.wallMs / 1000))}`;

function summaryRows(r, d) {
  const rows = [];
  const T = r.config.steps;
  if (r.overhead) {
    const o = r.overhead;
    rows.push(['1', 'run latency, 0 ms model, one at a time, p50 / p99', `${fmt(o.agentq.p50)} / ${fmt(o.agentq.p99)} ms`, `in-process ${fmt(o.inproc.p50)} / ${fmt(o.inproc.p99)} ms; bare BullMQ ${fmt(o.bare.p50)} / ${fmt(o.bare.p99)} ms; BullMQ loop ${fmt(o.loop.p50)} / ${fmt(o.loop.p99)} ms`, '']);
    rows.push(['1', `queue overhead per step (p50; ${T} steps a run)`, ms(d.overheadPerStep.agentq), `bare BullMQ ${ms(d.overheadPerStep.bare)}`, x(d.overheadPerStep.ratio)]);
    rows.push(['1', 'queue overhead per step (p99)', ms(d.overheadPerStepP99.agentq), `bare BullMQ ${ms(d.overheadPerStepP99.bare)}`, x(d.overheadPerStepP99.agentq / d.overheadPerStepP99.bare)]);
    rows.push(['1', '  the same for the BullMQ loop (no store)', ms(d.loopPerStep), `bare BullMQ ${ms(d.overheadPerStep.bare)}`, x(d.loopPerStep / d.overheadPerStep.bare)]);
    rows.push(['1', "  agentq's overhead per step, split (p50)", `queue ${ms(d.overheadPerStep.bare)} + model and tools in worker processes ${ms(d.split.workers)} + agentq's store and guarantees ${ms(d.split.agentq)}`, 'bare; BullMQ loop − bare − in-process; agentq − BullMQ loop', '']);
    rows.push(['1', `run latency, ${o.slow.modelMs} ms model, one at a time, p50`, ms(o.slow.agentq.p50), `in-process ${ms(o.slow.inproc.p50)}; BullMQ loop ${ms(o.slow.loop.p50)}; ideal ${ms(T * o.slow.modelMs)}`, `+${pct(d.slowAdded.share)} a step`]);
  }
  for (const [i, t] of (r.throughput ?? []).entries()) {
    const { ratio, ceiling } = d.throughput[i];
    const w = `${t.workers} agent-worker${t.workers > 1 ? 's' : ''}`;
    rows.push(['2', `throughput, ${t.agentq.n} runs at once, ${w}`, `${fmt(t.agentq.runsPerSec)} runs/s${reps(t.agentq)}, ${fmt(t.agentq.toolCallsPerSec)} tool calls/s (the POSTs took ${fmt(t.agentq.submitMs / 1000)} s)`, `bare BullMQ ${fmt(t.bare.runsPerSec)} runs/s${reps(t.bare)}, ${fmt(t.bare.toolCallsPerSec)} tool calls/s; in-process loop ${fmt(t.inproc.runsPerSec)} runs/s${reps(t.inproc)}`, x(ratio)]);
    rows.push(['2', `  run latency p50 / p99, ${w}`, `${fmt(t.agentq.latency.p50)} / ${fmt(t.agentq.latency.p99)} ms`, `bare BullMQ ${fmt(t.bare.latency.p50)} / ${fmt(t.bare.latency.p99)} ms; in-process ${fmt(t.inproc.latency.p50)} / ${fmt(t.inproc.latency.p99)} ms`, '']);
    rows.push(['2', `  the BullMQ loop (no store), ${w}`, `agentq ${fmt(t.agentq.runsPerSec)} runs/s`, `BullMQ loop ${fmt(t.loop.runsPerSec)} runs/s${reps(t.loop)}, p50 / p99 ${fmt(t.loop.latency.p50)} / ${fmt(t.loop.latency.p99)} ms`, x(t.agentq.runsPerSec / t.loop.runsPerSec)]);
    rows.push(['2', `  CPU per run, all processes, ${w}`, `${fmt(cpuPerRun(t.agentq))} ms`, `bare BullMQ ${fmt(cpuPerRun(t.bare))} ms; in-process ${fmt(cpuPerRun(t.inproc))} ms; BullMQ loop ${fmt(cpuPerRun(t.loop))} ms`, '']);
    rows.push(['2', `  ceiling here for a queue that cost nothing, ${w}`, `${x(ceiling)} bare BullMQ's runs/s`, 'bare CPU / (bare + in-process CPU) a run: the model and tool work shares the cores', '']);
  }
  if (r.concurrency) {
    const c = r.concurrency;
    for (const n of c.sizes) {
      const a = c.agentq[n];
      rows.push(['3', `${n} runs at once, ${c.modelMs} ms model: wall time`, secs(a), `ideal ${fmt(c.idealMs / 1000)} s; in-process ${fmt(c.inproc[n].wallMs / 1000)} s`, `${x(a.wallMs / c.idealMs)} ideal`]);
      rows.push(['3', `  run latency p50 / p99`, `${fmt(a.latency.p50)} / ${fmt(a.latency.p99)} ms`, `in-process ${fmt(c.inproc[n].latency.p50)} / ${fmt(c.inproc[n].latency.p99)} ms`, '']);
    }
    const so = c.scaleOut;
    const [one, two] = [so.runs[1], so.runs[2]];
    // Slot-seconds the runs need (a model step holds a slot for its whole call) over the slots: the wall time if slots were the only limit.
    const bound = (w) => (so.n * c.idealMs) / 1000 / (w * so.slots);
    rows.push(['3', `scale-out: ${so.n} runs at once, ${c.modelMs} ms model, ${so.slots} model-step slots per agent-worker`, `1 agent-worker ${secs(one)}; 2 agent-workers ${secs(two)}`, `slots alone allow ${fmt(bound(1))} s and ${fmt(bound(2))} s`, `${x(one.wallMs / two.wallMs)} faster`]);
    rows.push(['3', 'peak RSS (VmHWM) per process, MB', c.memory.map((m) => `${m.name} ${fmt(m.peak)}`).join(', '), '', '']);
    const n = c.sizes.at(-1);
    rows.push(['3', `${n} runs at once, V8 default heap: wall time`, secs(c.v8Defaults.agentq), `shipped heap flags ${fmt(c.agentq[n].wallMs / 1000)} s`, `${x(c.v8Defaults.agentq.wallMs / c.idealMs)} ideal`]);
    rows.push(['3', '  peak RSS, V8 default heap, MB', c.v8Defaults.memory.filter((m) => m.heap).map((m) => `${m.name} ${fmt(m.peak)}`).join(', '), 'no heap flags', '']);
  }
  if (r.redis) {
    for (const mode of ['sequential', 'batch']) {
      const { agentq: a, bare: b } = d.redis[mode];
      const label = mode === 'sequential' ? 'one at a time' : `${r.redis.agentq[mode].runs} at once`;
      rows.push(['4', `Redis commands per step (incl. inside Lua), ${label}`, fmt(a.commands), `bare BullMQ ${fmt(b.commands)}`, x(a.commands / b.commands)]);
      rows.push(['4', `  round trips per step, ${label}`, fmt(a.trips), `bare BullMQ ${fmt(b.trips)}`, x(a.trips / b.trips)]);
      rows.push(['4', `  Redis CPU per step, ${label}`, `${fmt(a.cpuUs)} µs`, `bare BullMQ ${fmt(b.cpuUs)} µs`, '']);
    }
  }
  return rows;
}

const CPU_COLUMNS = ['process', 'agentq', 'bare BullMQ', 'in-process loop', 'BullMQ loop'];

/** CPU ms per run by process for agentq, bare BullMQ, the in-process loop and the BullMQ loop, with totals. */
function cpuTable(t) {
  const systems = [t.agentq, t.bare, t.inproc, t.loop];
  const names = [...new Set(systems.flatMap((x) => Object.keys(x.cpuMs)))];
  const cell = (x, n) => (x.cpuMs[n] === undefined ? '–' : fmt(x.cpuMs[n] / x.n));
  const rows = names.map((n) => [n, ...systems.map((x) => cell(x, n))]);
  rows.push(['total', ...systems.map((x) => fmt(cpuPerRun(x)))]);
  return rows;
}

export const cpuPerRun = (x) => Object.values(x.cpuMs).reduce((a, b) => a + b, 0) / x.n;

function redisBreakdown(r, mode) {
  const a = r.redis.agentq[mode];
  const b = r.redis.bare[mode];
  const names = [...new Set([...Object.keys(a.clientCommands), ...Object.keys(b.clientCommands)])];
  const rows = names
    .map((n) => [n, (a.clientCommands[n] ?? 0) / a.steps, (b.clientCommands[n] ?? 0) / b.steps])
    .filter(([, va, vb]) => va >= 0.05 || vb >= 0.05)
    .sort((p, q) => q[1] - p[1] || q[2] - p[2]);
  const sent = rows.map(([n, va, vb]) => [n, fmt(va), fmt(vb)]);
  const serverNames = [...new Set([...Object.keys(a.server), ...Object.keys(b.server)])];
  const server = serverNames
    .map((n) => [n, (a.server[n]?.calls ?? 0) / a.steps, (b.server[n]?.calls ?? 0) / b.steps, (a.server[n]?.usec ?? 0) / a.steps])
    .filter(([, va, vb]) => va >= 0.05 || vb >= 0.05)
    .sort((p, q) => q[1] - p[1] || q[2] - p[2])
    .map(([n, va, vb, us]) => [n, fmt(va), fmt(vb), fmt(us)]);
  const procs = [...Object.entries(a.byProcess).map(([n, v]) => ['agentq', n, v]), ...Object.entries(b.byProcess).map(([n, v]) => ['bare', n, v])].map(([k, n, v]) => [
    k,
    n,
    fmt(v.trips / (k === 'agentq' ? a.steps : b.steps)),
    fmt(v.commands / (k === 'agentq' ? a.steps : b.steps)),
  ]);
  return { sent, server, procs };
}

/** The chart of BENCHMARKS.md: the main figure of each scenario against its baselines, as SVG. */
export function chart(r, d = derive(r)) {
  const panels = [];
  const AQ = '#2f6fd6';
  const BARE = '#8a8a8a';
  const INP = '#4c9a2a';
  const LOOP = '#b0662e';
  const IDEAL = '#c9a227';
  if (r.overhead) {
    const o = r.overhead;
    panels.push({
      title: `1. One run at a time, 0 ms model: latency (ms), bar p50, tick p99`,
      rows: [
        { label: 'in-process loop', value: o.inproc.p50, mark: o.inproc.p99, color: INP, note: `${fmt(o.inproc.p50)} / ${fmt(o.inproc.p99)}` },
        { label: 'bare BullMQ flows', value: o.bare.p50, mark: o.bare.p99, color: BARE, note: `${fmt(o.bare.p50)} / ${fmt(o.bare.p99)}` },
        { label: 'BullMQ loop, no store', value: o.loop.p50, mark: o.loop.p99, color: LOOP, note: `${fmt(o.loop.p50)} / ${fmt(o.loop.p99)}` },
        { label: 'agentq', value: o.agentq.p50, mark: o.agentq.p99, color: AQ, note: `${fmt(o.agentq.p50)} / ${fmt(o.agentq.p99)}` },
      ],
    });
  }
  if (r.throughput) {
    panels.push({
      title: `2. Throughput, ${r.throughput[0].agentq.n} runs submitted at once (runs/s)`,
      rows: [
        ...(r.throughput[0].inproc ? [{ label: 'in-process loop, 1 process', value: r.throughput[0].inproc.runsPerSec, color: INP, note: fmt(r.throughput[0].inproc.runsPerSec) }] : []),
        ...r.throughput.flatMap((t, i) => [
        { label: `bare BullMQ, ${t.workers} agent proc`, value: t.bare.runsPerSec, color: BARE, note: fmt(t.bare.runsPerSec) },
        { label: `BullMQ loop, ${t.workers} agent proc`, value: t.loop.runsPerSec, color: LOOP, note: fmt(t.loop.runsPerSec) },
        { label: `agentq, ${t.workers} agent-worker${t.workers > 1 ? 's' : ''}`, value: t.agentq.runsPerSec, color: AQ, note: `${fmt(t.agentq.runsPerSec)} (${x(d.throughput[i].ratio)})` },
        ]),
      ],
    });
  }
  if (r.concurrency) {
    const c = r.concurrency;
    panels.push({
      title: `3. Concurrent runs, ${c.modelMs} ms model: wall time (s)`,
      rows: [
        { label: 'ideal (4 model steps)', value: c.idealMs / 1000, color: IDEAL, note: fmt(c.idealMs / 1000) },
        ...c.sizes.flatMap((n) => [
          { label: `in-process, ${n} runs`, value: c.inproc[n].wallMs / 1000, color: INP, note: fmt(c.inproc[n].wallMs / 1000) },
          { label: `agentq, ${n} runs`, value: c.agentq[n].wallMs / 1000, color: AQ, note: `${fmt(c.agentq[n].wallMs / 1000)} (${x(c.agentq[n].wallMs / c.idealMs)})` },
        ]),
        ...[1, 2].map((w) => ({ label: `agentq, ${c.scaleOut.n}, ${w} worker${w > 1 ? 's' : ''} × ${c.scaleOut.slots} slots`, value: c.scaleOut.runs[w].wallMs / 1000, color: AQ, note: fmt(c.scaleOut.runs[w].wallMs / 1000) })),
        { label: `agentq, ${c.sizes.at(-1)}, V8 default heap`, value: c.v8Defaults.agentq.wallMs / 1000, color: AQ, note: `${fmt(c.v8Defaults.agentq.wallMs / 1000)} (${x(c.v8Defaults.agentq.wallMs / c.idealMs)})` },
      ],
    });
  }
  if (r.redis) {
    const { agentq: a, bare: b } = d.redis.batch;
    const runs = r.redis.agentq.batch.runs;
    const bars = (k) => [
      { label: 'bare BullMQ', value: b[k], color: BARE, note: fmt(b[k]) },
      { label: 'agentq', value: a[k], color: AQ, note: fmt(a[k]) },
    ];
    panels.push({ title: `4. Redis per step, ${runs} runs at once: round trips sent by the processes`, rows: bars('trips') });
    panels.push({ title: `4. Redis CPU per step, ${runs} runs at once (µs, redis-server process)`, rows: bars('cpuUs') });
  }
  const m = r.machine;
  return barChartSVG({ title: `agentq benchmarks, ${r.startedAt.slice(0, 10)}`, subtitle: `${m.nproc} cores ${m.cpu}, node ${m.node}, redis ${m.redis}, bullmq ${m.bullmq}, MCP over ${r.config.mcpTransport}`, panels });
}

/** BENCH_COMPARE's table: agentq of this checkout against the other one's, with their ratio. */
export function compareText(c) {
  const T = c.steps;
  const both = (f) => [f('this'), f('other')];
  const q = (f) => ['p50', 'p90'].map((p) => both((k) => f(k, p)));
  const row = (label, [[a50, b50], [a90, b90]]) => [label, `${fmt(a50)} / ${fmt(a90)}`, `${fmt(b50)} / ${fmt(b90)}`, `${fmt(a50 / b50)} / ${fmt(a90 / b90)}`];
  const rows = [
    row('run, 0 ms model, one at a time, p50 / p90 (ms)', q((k, p) => c.latency[k][p])),
    row(`overhead per step, (run − in-process) ÷ ${T}, p50 / p90 (ms)`, q((k, p) => (c.latency[k][p] - c.latency.inproc[p]) / T)),
  ];
  for (const mode of ['sequential', 'batch']) {
    const label = mode === 'sequential' ? 'one at a time' : `${c.redis.this[mode].runs} at once`;
    const per = (k, field) => c.redis[k][mode][field] / c.redis[k][mode].steps;
    const [a, b] = both((k) => per(k, 'serverCommands'));
    rows.push([`Redis commands per step (incl. inside Lua), ${label}`, fmt(a), fmt(b), fmt(a / b)]);
    const [ta, tb] = both((k) => per(k, 'trips'));
    rows.push([`round trips per step, ${label}`, fmt(ta), fmt(tb), fmt(ta / tb)]);
  }
  const { inproc } = c.latency;
  // The ratio of this's and other's p50 block by block: its spread is the noise of the table's ratios.
  const blockRatios = Array.from({ length: c.blocks }, (_, b) => {
    const p50 = (k) => quantile(c.times[k].slice(b * c.perBlock, (b + 1) * c.perBlock), 0.5);
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

/** Builds the terminal text, and (write) BENCHMARKS.md and the chart. */
export function report(r, { write }) {
  const d = derive(r);
  r.derived = d;
  const header = ['#', 'measure', 'agentq', 'baseline', 'ratio'];
  const rows = summaryRows(r, d);
  let text = textTable(header, rows);
  const noisy = (r.foreign ?? []).filter((f) => f.share > 0.1);
  if (noisy.length) text += `\n\nWarning: other processes used more than 10 % of the machine during: ${noisy.map((f) => `${f.label} (${pct(f.share)})`).join('; ')}`;
  text += `\n\nTargets:\n${d.targets.map((t) => `  [${t.ok ? 'met' : 'NOT met'}] ${t.name}: ${t.value}`).join('\n')}`;
  if (r.throughput) {
    for (const t of r.throughput) text += `\n\nCPU ms per run by process, throughput with ${t.workers} agent-worker(s):\n${textTable(CPU_COLUMNS, cpuTable(t))}`;
  }
  if (r.redis) {
    const br = redisBreakdown(r, 'batch');
    text += `\n\nCommands sent per step (client side, ${r.redis.agentq.batch.runs} runs at once):\n${textTable(['command', 'agentq', 'bare BullMQ'], br.sent)}`;
    text += `\n\nRound trips and commands per step by process:\n${textTable(['system', 'process', 'round trips', 'commands'], br.procs)}`;
  }
  const files = [];
  if (write) {
    const dir = join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const svg = join(dir, 'chart.svg');
    writeFileSync(svg, chart(r, d));
    files.push(svg);
    const md = join(ROOT, 'BENCHMARKS.md');
    writeFileSync(md, markdown(r, d, header, rows));
    files.push(md);
  }
  return { text, files };
}

const memTable = (mem) =>
  mdTable(
    ['process', 'RSS when started (MB)', 'peak RSS (MB)', 'RSS at the end (MB)', 'V8 heap used / total at the end (MB)', 'live heap after a full GC (MB)'],
    mem.map((m) => [m.name, fmt(m.started), fmt(m.peak), fmt(m.rss), m.heap ? `${fmt(m.heap.usedMB)} / ${fmt(m.heap.totalMB)}` : '–', fmt(m.heap?.liveMB)]),
  );

function markdown(r, d, header, rows) {
  const m = r.machine;
  const c = r.config;
  const out = [];
  out.push('# Benchmarks');
  out.push('');
  out.push(
    `What durability costs agentq, what it does per second, and how it scales, measured by \`npm run bench\` on ${r.startedAt.slice(0, 16).replace('T', ' ')} UTC (${fmt(r.durationS)} s, commit ${m.commit}). Every number on this page comes from that one run on one machine; this file and \`bench/results/\` are rewritten by each full run.`,
  );
  out.push('');
  out.push('![agentq benchmarks](bench/results/chart.svg)');
  out.push('');
  out.push('## Machine');
  out.push('');
  out.push(
    mdTable(
      ['', ''],
      [
        ['CPU', `${m.nproc} cores (\`nproc\`), ${m.cpu}`],
        ['RAM', `${fmt(m.ramGiB)} GiB`],
        ['OS', m.os],
        ['Node', m.node],
        ['Redis', `${m.redis}: ${m.redisSetup}`],
        ['libraries', `bullmq ${m.bullmq}, ioredis ${m.ioredis}, @modelcontextprotocol/sdk ${m.mcpSdk}, openai ${m.openai}`],
      ],
    ),
  );
  out.push('');
  out.push('Everything runs on this one machine: Redis, the services, the scripted model, the MCP server and the benchmark client share its cores, so the numbers are those of a whole system on 2 cores, not of a worker with a machine to itself.');
  out.push('');
  out.push('## Commands');
  out.push('');
  out.push('```sh');
  out.push('npm run bench                      # build, then every scenario (≈ 5–8 minutes); rewrites this file');
  out.push('BENCH_QUICK=1 npm run bench        # smoke version: 100 runs instead of 1,000, no repetitions (≈ 2 minutes)');
  out.push('BENCH_MCP=http npm run bench       # the no-op MCP server over Streamable HTTP instead of stdio');
  out.push('BENCH_ONLY=2,4 npm run bench       # some scenarios only (into bench/results/partial.json)');
  out.push('BENCH_PROFILE=1 npm run bench      # also CPU profiles of the services (bench/results/profiles)');
  out.push('node bench/profile-summary.mjs bench/results/profiles/<file>.cpuprofile');
  out.push('BENCH_NODE_OPTIONS="--max-old-space-size=1024" npm run bench   # NODE_OPTIONS for the services (one that sizes the heap replaces the shipped heap flags)');
  out.push('N=200 node bench/timeline.mjs            # where the time of a step goes, one run at a time (BARE=1: bare BullMQ, LOOP=1: the BullMQ loop)');
  out.push('BENCH_REPORT_ONLY=1 node bench/run.mjs   # re-render this file and the chart from bench/results/latest.json');
  out.push('```');
  out.push('');
  out.push('It needs `redis-server` on the PATH (it starts its own on a free loopback port; `BENCH_REDIS_URL` uses another Redis instead, under a unique key prefix, deleted afterwards). Everything talks only to 127.0.0.1, and every process it starts is stopped at the end. It is not part of `npm test`.');
  out.push('');
  out.push('## Setup');
  out.push('');
  out.push(`- **Workload**: every run is ${c.rounds} rounds of ${c.fanout} parallel tool calls and a final answer: ${c.steps} model steps and ${c.toolCallsPerRun} tool calls. "Per step" divides a run by ${c.steps}.`);
  out.push('- **Model**: the project\'s scripted OpenAI-compatible server (`packages/scripted-llm`) in its own process, streaming its answers; its latency is 0 ms or 500 ms per call (`bench/llm-server.mjs`).');
  out.push(`- **Tools**: a no-op MCP server on the official SDK (\`bench/noop-mcp-server.mjs\`, one tool that answers "ok"), reached over **${c.mcpTransport}**${c.mcpTransport === 'stdio' ? ' (each tool-worker spawns its own)' : ' (one server process, stateless, JSON responses)'}.`);
  out.push(`- **agentq**: the built services as processes (\`node services/<name>/dist/main.js\`): one api, one or two agent-workers, one tool-worker, \`LOG_LEVEL=warn\`, default concurrency (100 per worker) unless said otherwise, with the heap flags \`npm start\` and the Dockerfile give them (\`NODE_OPTIONS="${r.config?.heapFlags ?? '(none recorded)'}"\`; scenario 3 also without). Runs are submitted with \`POST /v1/runs\`.`);
  out.push('- **In-process baseline**: the seeds\' recursive loop in the benchmark process (`bench/lib/inprocess-loop.mjs`): the openai SDK against the same scripted model, the MCP SDK client against the same MCP server, recurse. No queue, no store: a crash loses the run.');
  out.push('- **Bare BullMQ baseline**: the same job graph as agentq (one agent-turn job per model step; each round a FlowProducer flow whose parent is the next step\'s job and whose children are 3 tool jobs), same job ids, job options and lock settings, with no-op processors in separate agent and tool processes (`bench/bare-worker.mjs`). No model, no MCP, no run store: the queue\'s own cost.');
  out.push('- **BullMQ loop baseline**: the same processes and job graph as bare BullMQ, whose processors also do the agent loop\'s work (`bench/bare-worker.mjs` with `WORK=1`): the agent job calls the scripted model (openai SDK, streamed) with the transcript it carries in its job data plus its children\'s return values, each tool job calls the no-op MCP server (MCP SDK client, its own server over the same transport). No run store, no events, no budgets, no at-most-once bookkeeping, no API: what moving the seeds\' loop onto BullMQ costs before any of agentq\'s guarantees. Its processes, like bare BullMQ\'s, run with V8\'s default heap sizing.');
  out.push(`- **One at a time (scenario 1)**: the in-process loop, bare BullMQ, the BullMQ loop and agentq are all up at once and alternate in ${r.overhead.interleaved.blocks} blocks of ${r.overhead.interleaved.perBlock} runs each (in a rotating order), so that the machine's drift during the scenario weighs on all four alike; with the 500 ms model, the in-process loop, the BullMQ loop and agentq alternate run by run.`);
  out.push(`- **Repetitions**: every many-runs measurement is made ${r.config.repeat ?? 1} time(s) on the same processes and the fastest is kept (other processes on a shared machine only ever slow a run down; the first repetition also still warms the JIT); the tables list every repetition.`);
  out.push('- **Seeing a run finish**: one at a time, agentq runs are followed by reading the run\'s event stream straight from Redis (`XREAD BLOCK`, what an SSE client sees, without the API in between); bare and BullMQ-loop runs by `QueueEvents` for the last step\'s job. With many runs in flight, the client polls one `ZCARD` of the agent queue\'s completed set every 25 ms (one command, whatever the number of runs) and afterwards reads each run\'s `created_at`/`completed_at` (agentq run record) or first job `timestamp`/last job `finishedOn` (bare, BullMQ loop): latencies are the system\'s own timestamps, and polling adds neither load per run nor its period to them. Throughput counts from the first submission to the last completion.');
  out.push('- **Redis CPU** is the redis-server process\'s CPU time (`/proc`), AOF writes included: with few runs in flight each round trip gets its own AOF write, which is why Redis CPU per step is much higher one at a time than under load.');
  out.push('- **Redis cost**: `INFO commandstats` before and after (on the benchmark\'s own Redis, the client\'s own commands subtracted), which counts every command Redis executed, including those run inside Lua scripts; and a client-side probe (`bench/lib/redis-probe.mjs`, loaded with `NODE_OPTIONS=--import` into the services for that scenario only) that counts what each process sends: commands by name (scripts by name) and round trips (a command sent alone, or a pipeline/MULTI sent as one write).');
  out.push('');
  out.push('## Results');
  out.push('');
  out.push(mdTable(header, rows.map((row) => row.map((cell) => String(cell).replace(/^ {2}/, '↳ ')))));
  out.push('');
  out.push('## Targets');
  out.push('');
  out.push(mdTable(['target', 'measured', ''], d.targets.map((t) => [t.name, t.value, t.ok ? 'met' : 'NOT met'])));
  out.push('');
  if (r.overhead?.units) {
    out.push('## Unit costs');
    out.push('');
    out.push('Measured in the benchmark process, one operation at a time (client-side CPU and wall time per operation); they explain most of the CPU tables below:');
    out.push('');
    out.push(mdTable(['operation', 'CPU (ms)', 'wall (ms)'], r.overhead.units.map((u) => [u.label, fmt(u.cpuMs), fmt(u.wallMs)])));
    out.push('');
  }
  if (r.throughput) {
    out.push('## Where the CPU goes (scenario 2)');
    out.push('');
    out.push('CPU time per run by process (user + system, from `/proc/<pid>/stat`), over the throughput measurement:');
    out.push('');
    for (const t of r.throughput) {
      out.push(`${t.workers} agent-worker${t.workers > 1 ? 's' : ''}, ${t.agentq.n} runs (ms per run):`);
      out.push('');
      out.push(mdTable(CPU_COLUMNS, cpuTable(t)));
      out.push('');
    }
  }
  if (r.concurrency) {
    const cc = r.concurrency;
    out.push('## Memory (scenario 3)');
    out.push('');
    out.push(`Peak RSS (VmHWM from \`/proc/<pid>/status\`) of each process after ${cc.sizes.join(' and ')} concurrent runs with a ${cc.modelMs} ms model, one agent-worker with AGENT_CONCURRENCY=${cc.config.agentConcurrency}, TOOL_CONCURRENCY=${cc.config.toolConcurrency}, the services started as \`npm start\` and the Dockerfile start them (\`NODE_OPTIONS="${cc.heapFlags}"\`):`);
    out.push('');
    out.push(memTable(cc.memory));
    out.push('');
    out.push(`The same ${cc.sizes.at(-1)} runs with V8's default heap sizing (no heap flags; a larger young generation and no old-space cap), wall time ${fmt(cc.v8Defaults.agentq.wallMs / 1000)} s:`);
    out.push('');
    out.push(memTable(cc.v8Defaults.memory));
    out.push('');
    out.push('"At the end" is after the last run finished, before the services stop; the services run with `--expose-gc` in this scenario so that the probe can force one full collection and report what is still live.');
    out.push('');
  }
  if (r.redis) {
    for (const mode of ['batch', 'sequential']) {
      const br = redisBreakdown(r, mode);
      const a = r.redis.agentq[mode];
      const label = mode === 'batch' ? `${a.runs} runs at once` : `${a.runs} runs one at a time`;
      out.push(`## Redis per step, ${label} (scenario 4)`);
      out.push('');
      out.push('Commands the clients sent, per step, by command (`evalsha:<name>` is a Lua script: BullMQ\'s, or the run store\'s `agentq…`):');
      out.push('');
      out.push(mdTable(['command', 'agentq', 'bare BullMQ'], br.sent));
      out.push('');
      out.push('Round trips and commands per step, by process:');
      out.push('');
      out.push(mdTable(['system', 'process', 'round trips', 'commands'], br.procs));
      out.push('');
      out.push('Commands Redis executed per step (`INFO commandstats`, including the commands inside scripts), and agentq\'s Redis time per step in µs (the time of `evalsha` and `exec` includes that of the commands inside them, which also have rows of their own):');
      out.push('');
      out.push(mdTable(['command', 'agentq', 'bare BullMQ', 'agentq µs'], br.server));
      out.push('');
    }
  }
  if (r.foreign?.length) {
    out.push('## Noise');
    out.push('');
    out.push('The machine is shared (other people\'s builds and test suites may run on it). Before each measurement the benchmark waits (up to 30 s, 3 minutes in all) until processes other than its own use less than 10 % of the machine, and it records how much they used during the measurement (busy time from `/proc/stat` minus the CPU time of the benchmark\'s own processes):');
    out.push('');
    out.push(mdTable(['measurement', 'other processes, share of the machine'], r.foreign.map((f) => [f.label, pct(f.share)])));
    out.push('');
  }
  const findings = join(ROOT, 'bench', 'findings.md');
  if (existsSync(findings)) {
    out.push(readFileSync(findings, 'utf8').trim());
    out.push('');
  }
  return `${out.join('\n')}\n`;
}

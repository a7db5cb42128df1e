// @ts-check
// The tables of the results, as rows of cells: written to the terminal and into BENCHMARKS.md
// alike.
import { cpuPerRun, largest } from './derive.mjs';
import { fmt, ms, pct, x } from './stats.mjs';

/**
 * @import { Derived, Measurement, MemoryRow, Results, ThroughputResults } from './types.d.ts'
 * @typedef {Measurement['repetitions'][number]} Repetition
 */

/**
 * " (best of N: each repetition's figure)" for a measurement that was repeated.
 * @param {Measurement} m
 * @param {(rep: Repetition) => string} f
 */
const reps = (m, f = (v) => fmt(v.runsPerSec)) =>
  m.repetitions?.length > 1 ? ` (best of ${m.repetitions.length}: ${m.repetitions.map(f).join(', ')})` : '';
/**
 * A wall time in seconds, with its repetitions.
 * @param {Measurement} m
 */
const secs = (m) => `${fmt(m.wallMs / 1000)} s${reps(m, (v) => fmt(v.wallMs / 1000))}`;

/**
 * The results' rows, each [scenario, measure, agentq, baselines, ratio]; a measure that starts
 * with two spaces belongs to the row above it.
 * @param {Results} r
 * @param {Derived} d
 * @returns {string[][]}
 */
export function summaryRows(r, d) {
  /** @type {string[][]} */
  const rows = [];
  const T = r.config.steps;
  if (
    r.overhead &&
    d.overheadPerStep &&
    d.overheadPerStepP99 &&
    d.split &&
    d.slowAdded &&
    d.loopPerStep !== undefined
  ) {
    const o = r.overhead;
    rows.push([
      '1',
      'run latency, 0 ms model, one at a time, p50 / p99',
      `${fmt(o.agentq.p50)} / ${fmt(o.agentq.p99)} ms`,
      `in-process ${fmt(o.inproc.p50)} / ${fmt(o.inproc.p99)} ms; bare BullMQ ${fmt(o.bare.p50)} / ${fmt(o.bare.p99)} ms; BullMQ loop ${fmt(o.loop.p50)} / ${fmt(o.loop.p99)} ms`,
      '',
    ]);
    rows.push([
      '1',
      `queue overhead per step (p50; ${T} steps a run)`,
      ms(d.overheadPerStep.agentq),
      `bare BullMQ ${ms(d.overheadPerStep.bare)}`,
      x(d.overheadPerStep.ratio),
    ]);
    rows.push([
      '1',
      'queue overhead per step (p99)',
      ms(d.overheadPerStepP99.agentq),
      `bare BullMQ ${ms(d.overheadPerStepP99.bare)}`,
      x(d.overheadPerStepP99.agentq / d.overheadPerStepP99.bare),
    ]);
    rows.push([
      '1',
      '  the same for the BullMQ loop (no store)',
      ms(d.loopPerStep),
      `bare BullMQ ${ms(d.overheadPerStep.bare)}`,
      x(d.loopPerStep / d.overheadPerStep.bare),
    ]);
    rows.push([
      '1',
      "  agentq's overhead per step, split (p50)",
      `queue ${ms(d.overheadPerStep.bare)} + model and tools in worker processes ${ms(d.split.workers)} + agentq's store and guarantees ${ms(d.split.agentq)}`,
      'bare; BullMQ loop − bare − in-process; agentq − BullMQ loop',
      '',
    ]);
    rows.push([
      '1',
      `run latency, ${o.slow.modelMs} ms model, one at a time, p50`,
      ms(o.slow.agentq.p50),
      `in-process ${ms(o.slow.inproc.p50)}; BullMQ loop ${ms(o.slow.loop.p50)}; ideal ${ms(T * o.slow.modelMs)}`,
      `+${pct(d.slowAdded.share)} a step`,
    ]);
  }
  for (const [i, t] of (r.throughput ?? []).entries()) {
    const { ratio, ceiling } = d.throughput?.[i] ?? { ratio: NaN, ceiling: NaN };
    const w = `${t.workers} agent-worker${t.workers > 1 ? 's' : ''}`;
    rows.push([
      '2',
      `throughput, ${t.agentq.n} runs at once, ${w}`,
      `${fmt(t.agentq.runsPerSec)} runs/s${reps(t.agentq)}, ${fmt(t.agentq.toolCallsPerSec)} tool calls/s (the POSTs took ${fmt((t.agentq.submitMs ?? NaN) / 1000)} s)`,
      `bare BullMQ ${fmt(t.bare.runsPerSec)} runs/s${reps(t.bare)}, ${fmt(t.bare.toolCallsPerSec)} tool calls/s; in-process loop ${fmt(t.inproc.runsPerSec)} runs/s${reps(t.inproc)}`,
      x(ratio),
    ]);
    rows.push([
      '2',
      `  run latency p50 / p99, ${w}`,
      `${fmt(t.agentq.latency.p50)} / ${fmt(t.agentq.latency.p99)} ms`,
      `bare BullMQ ${fmt(t.bare.latency.p50)} / ${fmt(t.bare.latency.p99)} ms; in-process ${fmt(t.inproc.latency.p50)} / ${fmt(t.inproc.latency.p99)} ms`,
      '',
    ]);
    rows.push([
      '2',
      `  the BullMQ loop (no store), ${w}`,
      `agentq ${fmt(t.agentq.runsPerSec)} runs/s`,
      `BullMQ loop ${fmt(t.loop.runsPerSec)} runs/s${reps(t.loop)}, p50 / p99 ${fmt(t.loop.latency.p50)} / ${fmt(t.loop.latency.p99)} ms`,
      x(t.agentq.runsPerSec / t.loop.runsPerSec),
    ]);
    rows.push([
      '2',
      `  CPU per run, all processes, ${w}`,
      `${fmt(cpuPerRun(t.agentq))} ms`,
      `bare BullMQ ${fmt(cpuPerRun(t.bare))} ms; in-process ${fmt(cpuPerRun(t.inproc))} ms; BullMQ loop ${fmt(cpuPerRun(t.loop))} ms`,
      '',
    ]);
    rows.push([
      '2',
      `  ceiling here for a queue that cost nothing, ${w}`,
      `${x(ceiling)} bare BullMQ's runs/s`,
      'bare CPU / (bare + in-process CPU) a run: the model and tool work shares the cores',
      '',
    ]);
  }
  if (r.concurrency) {
    const c = r.concurrency;
    for (const n of c.sizes) {
      const a = c.agentq[n];
      const l = c.loop?.[n];
      rows.push([
        '3',
        `${n} runs at once, ${c.modelMs} ms model: wall time`,
        secs(a),
        `ideal ${fmt(c.idealMs / 1000)} s; in-process ${secs(c.inproc[n])}${l ? `; BullMQ loop ${secs(l)}` : ''}`,
        `${x(a.wallMs / c.idealMs)} ideal`,
      ]);
      rows.push([
        '3',
        `  run latency p50 / p99`,
        `${fmt(a.latency.p50)} / ${fmt(a.latency.p99)} ms`,
        `in-process ${fmt(c.inproc[n].latency.p50)} / ${fmt(c.inproc[n].latency.p99)} ms`,
        '',
      ]);
    }
    const so = c.scaleOut;
    const [one, two] = [so.runs[1], so.runs[2]];
    // Slot-seconds the runs need (a model step holds a slot for its whole call) over the slots: the wall time if slots were the only limit.
    /** @param {number} w agent-workers */
    const bound = (w) => (so.n * c.idealMs) / 1000 / (w * so.slots);
    rows.push([
      '3',
      `scale-out: ${so.n} runs at once, ${c.modelMs} ms model, ${so.slots} model-step slots per agent-worker`,
      `1 agent-worker ${secs(one)}; 2 agent-workers ${secs(two)}`,
      `slots alone allow ${fmt(bound(1))} s and ${fmt(bound(2))} s`,
      `${x(one.wallMs / two.wallMs)} faster`,
    ]);
    rows.push([
      '3',
      'peak RSS (VmHWM) per process, MB',
      c.memory.map((m) => `${m.name} ${fmt(m.peak)}`).join(', '),
      '',
      '',
    ]);
    const n = largest(c.sizes);
    rows.push([
      '3',
      `${n} runs at once, V8 default heap: wall time`,
      secs(c.v8Defaults.agentq),
      `shipped heap flags ${fmt(c.agentq[n].wallMs / 1000)} s`,
      `${x(c.v8Defaults.agentq.wallMs / c.idealMs)} ideal`,
    ]);
    rows.push([
      '3',
      '  peak RSS, V8 default heap, MB',
      c.v8Defaults.memory
        .filter((m) => m.heap)
        .map((m) => `${m.name} ${fmt(m.peak)}`)
        .join(', '),
      'no heap flags',
      '',
    ]);
  }
  if (r.redis && d.redis) {
    for (const mode of /** @type {const} */ (['sequential', 'batch'])) {
      const { agentq: a, bare: b, loop: l } = d.redis[mode];
      const label = mode === 'sequential' ? 'one at a time' : `${r.redis.agentq[mode].runs} at once`;
      /** @param {'commands' | 'trips'} k */
      const andLoop = (k) => (l ? `; BullMQ loop ${fmt(l[k])}` : '');
      rows.push([
        '4',
        `Redis commands per step (incl. inside Lua), ${label}`,
        fmt(a.commands),
        `bare BullMQ ${fmt(b.commands)}${andLoop('commands')}`,
        x(a.commands / b.commands),
      ]);
      rows.push([
        '4',
        `  round trips per step, ${label}`,
        fmt(a.trips),
        `bare BullMQ ${fmt(b.trips)}${andLoop('trips')}`,
        x(a.trips / b.trips),
      ]);
      /**
       * Each system's two windows (mean first), when scenario 4 measured it twice.
       * @param {{ cpuUs: number, cpuWindows?: number[] }} s
       */
      const cpu = (s) =>
        `${fmt(s.cpuUs)} µs${s.cpuWindows && s.cpuWindows.length > 1 ? ` (${s.cpuWindows.map((v) => fmt(v)).join(', ')})` : ''}`;
      rows.push([
        '4',
        `  Redis CPU per step, ${label}`,
        cpu(a),
        `bare BullMQ ${cpu(b)}${l ? `; BullMQ loop ${cpu(l)}` : ''}`,
        x(a.cpuUs / b.cpuUs),
      ]);
      // What the clients sent, and what Redis appended to its AOF.
      if (Number.isFinite(a.bytesIn))
        rows.push([
          '4',
          `  KB per step in from clients / into the AOF, ${label}`,
          `${fmt(a.bytesIn / 1024)} / ${fmt(a.aofBytes / 1024)}`,
          `bare BullMQ ${fmt(b.bytesIn / 1024)} / ${fmt(b.aofBytes / 1024)}${l ? `; BullMQ loop ${fmt(l.bytesIn / 1024)} / ${fmt(l.aofBytes / 1024)}` : ''}`,
          x(a.aofBytes / b.aofBytes),
        ]);
    }
  }
  if (r.redisBound && d.redisBound?.vsLoop && d.redisBound.vsBare) {
    const { agentq: a, bare: b, loop: l, vsLoop, vsBare } = d.redisBound;
    const label = `Redis-bound (capped at ${Math.round(r.redisBound.cap * 100)} % of a core), ${r.redisBound.runs} runs at once`;
    /**
     * A system's mean and, in brackets, its windows.
     * @param {import('./types.d.ts').CappedSummary} s
     * @param {'runsPerSec' | 'redisUsPerStep'} k
     */
    const windows = (s, k) =>
      `${fmt(s[k])}${s.windows.length > 1 ? ` (${s.windows.map((w) => fmt(w[k])).join(', ')})` : ''}`;
    // The ratios are the means of the windows' (agentq's windows: those beside the loop, then those beside bare BullMQ).
    rows.push([
      '5',
      `${label}: runs/s`,
      windows(a, 'runsPerSec'),
      `bare BullMQ ${windows(b, 'runsPerSec')}; BullMQ loop ${windows(l, 'runsPerSec')}`,
      `${x(vsLoop.runsPerSec)} loop`,
    ]);
    rows.push([
      '5',
      '  Redis CPU per step (µs)',
      windows(a, 'redisUsPerStep'),
      `bare BullMQ ${windows(b, 'redisUsPerStep')}; BullMQ loop ${windows(l, 'redisUsPerStep')}`,
      x(vsBare.redisUsPerStep),
    ]);
  }
  return rows;
}

export const CPU_COLUMNS = ['process', 'agentq', 'bare BullMQ', 'in-process loop', 'BullMQ loop'];

/**
 * CPU ms per run by process for agentq, bare BullMQ, the in-process loop and the BullMQ loop, with totals.
 * @param {ThroughputResults} t
 */
export function cpuTable(t) {
  const systems = [t.agentq, t.bare, t.inproc, t.loop];
  const names = [...new Set(systems.flatMap((s) => Object.keys(s.cpuMs)))];
  /** @param {Measurement} s @param {string} n */
  const cell = (s, n) => (s.cpuMs[n] === undefined ? '–' : fmt(s.cpuMs[n] / s.n));
  const rows = names.map((n) => [n, ...systems.map((s) => cell(s, n))]);
  rows.push(['total', ...systems.map((s) => fmt(cpuPerRun(s)))]);
  return rows;
}

export const MEMORY_COLUMNS = [
  'process',
  'RSS when started (MB)',
  'peak RSS (MB)',
  "peak RSS, V8's default heap (MB)",
  'live heap after a full GC (MB)',
];

/**
 * Each process's memory in scenario 3: at its start, at its peak with the shipped heap flags and
 * with V8's defaults, and what its heap held at the end.
 * @param {MemoryRow[]} shipped
 * @param {MemoryRow[]} v8Defaults
 */
export function memoryTable(shipped, v8Defaults) {
  return shipped.map((m) => [
    m.name,
    fmt(m.started),
    fmt(m.peak),
    fmt(v8Defaults.find((v) => v.name === m.name)?.peak),
    fmt(m.heap?.liveMB),
  ]);
}

/**
 * What each process sent Redis a step in scenario 4, and the commands the clients sent by name.
 * @param {Results} r
 * @param {'sequential' | 'batch'} mode
 */
export function redisBreakdown(r, mode) {
  if (!r.redis) return { sent: [], procs: [] };
  const a = r.redis.agentq[mode];
  const b = r.redis.bare[mode];
  const names = [...new Set([...Object.keys(a.clientCommands), ...Object.keys(b.clientCommands)])];
  /** @type {Array<[string, number, number]>} */
  const perStep = names.map((n) => [n, (a.clientCommands[n] ?? 0) / a.steps, (b.clientCommands[n] ?? 0) / b.steps]);
  const sent = perStep
    .filter(([, va, vb]) => va >= 0.05 || vb >= 0.05)
    .sort((p, q) => q[1] - p[1] || q[2] - p[2])
    .map(([n, va, vb]) => [n, fmt(va), fmt(vb)]);
  const procs = [
    ...Object.entries(a.byProcess).map(([n, v]) => ['agentq', n, fmt(v.trips / a.steps), fmt(v.commands / a.steps)]),
    ...Object.entries(b.byProcess).map(([n, v]) => ['bare', n, fmt(v.trips / b.steps), fmt(v.commands / b.steps)]),
  ];
  return { sent, procs };
}

// @ts-check
// The chart of a full run (bench/results/chart.svg).
import { derive } from './derive.mjs';
import { barChartSVG } from './svg-chart.mjs';
import { fmt, x } from './stats.mjs';

/**
 * The run's chart: the main figure of each scenario against its baselines, as SVG.
 * @param {import('./types.d.ts').Results} r
 * @param {import('./types.d.ts').Derived} d
 */
export function chart(r, d = derive(r)) {
  /** @type {import('./svg-chart.mjs').Panel[]} */
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
        {
          label: 'in-process loop',
          value: o.inproc.p50,
          mark: o.inproc.p99,
          color: INP,
          note: `${fmt(o.inproc.p50)} / ${fmt(o.inproc.p99)}`,
        },
        {
          label: 'bare BullMQ flows',
          value: o.bare.p50,
          mark: o.bare.p99,
          color: BARE,
          note: `${fmt(o.bare.p50)} / ${fmt(o.bare.p99)}`,
        },
        {
          label: 'BullMQ loop, no store',
          value: o.loop.p50,
          mark: o.loop.p99,
          color: LOOP,
          note: `${fmt(o.loop.p50)} / ${fmt(o.loop.p99)}`,
        },
        {
          label: 'agentq',
          value: o.agentq.p50,
          mark: o.agentq.p99,
          color: AQ,
          note: `${fmt(o.agentq.p50)} / ${fmt(o.agentq.p99)}`,
        },
      ],
    });
  }
  if (r.throughput) {
    panels.push({
      title: `2. Throughput, ${r.throughput[0].agentq.n} runs submitted at once (runs/s)`,
      rows: [
        ...(r.throughput[0].inproc
          ? [
              {
                label: 'in-process loop, 1 process',
                value: r.throughput[0].inproc.runsPerSec,
                color: INP,
                note: fmt(r.throughput[0].inproc.runsPerSec),
              },
            ]
          : []),
        ...r.throughput.flatMap((t, i) => [
          {
            label: `bare BullMQ, ${t.workers} agent proc`,
            value: t.bare.runsPerSec,
            color: BARE,
            note: fmt(t.bare.runsPerSec),
          },
          {
            label: `BullMQ loop, ${t.workers} agent proc`,
            value: t.loop.runsPerSec,
            color: LOOP,
            note: fmt(t.loop.runsPerSec),
          },
          {
            label: `agentq, ${t.workers} agent-worker${t.workers > 1 ? 's' : ''}`,
            value: t.agentq.runsPerSec,
            color: AQ,
            note: `${fmt(t.agentq.runsPerSec)} (${x(d.throughput?.[i].ratio ?? NaN)})`,
          },
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
          {
            label: `in-process, ${n} runs`,
            value: c.inproc[n].wallMs / 1000,
            color: INP,
            note: fmt(c.inproc[n].wallMs / 1000),
          },
          {
            label: `agentq, ${n} runs`,
            value: c.agentq[n].wallMs / 1000,
            color: AQ,
            note: `${fmt(c.agentq[n].wallMs / 1000)} (${x(c.agentq[n].wallMs / c.idealMs)})`,
          },
        ]),
        ...[1, 2].map((w) => ({
          label: `agentq, ${c.scaleOut.n}, ${w} worker${w > 1 ? 's' : ''} × ${c.scaleOut.slots} slots`,
          value: c.scaleOut.runs[w].wallMs / 1000,
          color: AQ,
          note: fmt(c.scaleOut.runs[w].wallMs / 1000),
        })),
        {
          label: `agentq, ${c.sizes.at(-1)}, V8 default heap`,
          value: c.v8Defaults.agentq.wallMs / 1000,
          color: AQ,
          note: `${fmt(c.v8Defaults.agentq.wallMs / 1000)} (${x(c.v8Defaults.agentq.wallMs / c.idealMs)})`,
        },
      ],
    });
  }
  if (r.redis && d.redis) {
    const { agentq: a, bare: b } = d.redis.batch;
    const runs = r.redis.agentq.batch.runs;
    /** @param {'trips' | 'cpuUs'} k */
    const bars = (k) => [
      { label: 'bare BullMQ', value: b[k], color: BARE, note: fmt(b[k]) },
      { label: 'agentq', value: a[k], color: AQ, note: fmt(a[k]) },
    ];
    panels.push({
      title: `4. Redis per step, ${runs} runs at once: round trips sent by the processes`,
      rows: bars('trips'),
    });
    panels.push({
      title: `4. Redis CPU per step, ${runs} runs at once (µs, redis-server process)`,
      rows: bars('cpuUs'),
    });
  }
  const m = r.machine;
  return barChartSVG({
    title: `agentq benchmarks, ${r.startedAt.slice(0, 10)}`,
    subtitle: `${m.nproc} cores ${m.cpu}, node ${m.node}, redis ${m.redis}, bullmq ${m.bullmq}, MCP over ${r.config.mcpTransport}`,
    panels,
  });
}

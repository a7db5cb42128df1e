import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { runKeys } from '@agentq/shared/store';
import type { AgentqStack, BenchRedis, CompareResults, Derived, Results, RunTimes } from '../../bench/lib/types.js';

// The benchmark (`npm run bench`) is not part of the suite; these tests keep its parts working:
// the harness against the built services, the judgement of the targets, the page it writes and
// its SVG chart. Git keeps no results of a run: the page and the targets are judged on the
// made-up results of sampleResults() below.
const load = <T>(path: string): Promise<T> => import(new URL(path, import.meta.url).href);

/** The parts of bench/lib these tests use, as its JSDoc types them (the root tsconfig reads no .mjs). */
interface Harness {
  startRedis(): Promise<BenchRedis>;
  startAgentq(
    ctl: Redis,
    url: string,
    options: { agentConcurrency: number; toolConcurrency: number },
  ): Promise<AgentqStack>;
  submitAgentqRun(stack: AgentqStack, model: string): Promise<string>;
  waitAgentqRun(waiter: Redis, stack: AgentqStack, id: string): Promise<string>;
  agentqRunTimes(ctl: Redis, prefix: string, ids: string[]): Promise<RunTimes[]>;
  STEPS: number;
  TOOL_CALLS: number;
}
interface Report {
  derive(r: Results): Derived;
  markdown(r: Results, d: Derived): string;
  chart(r: Results, d?: Derived): string;
  compareText(c: CompareResults): string;
}
type Bar = { label: string; value: number; color: string; mark?: number; note?: string };
interface SvgChart {
  barChartSVG(chart: { title: string; subtitle?: string; panels: Array<{ title: string; rows: Bar[] }> }): string;
}

describe('the benchmark', () => {
  it('runs agentq as built processes on a Redis of its own and sees its runs finish', async () => {
    const h = await load<Harness>('../../bench/lib/harness.mjs');
    const redis = await h.startRedis();
    const ctl = new Redis(redis.url);
    const waiter = new Redis(redis.url);
    try {
      const stack = await h.startAgentq(ctl, redis.url, { agentConcurrency: 10, toolConcurrency: 10 });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) {
          const id = await h.submitAgentqRun(stack, 'bench');
          await h.waitAgentqRun(waiter, stack, id);
          ids.push(id);
        }
        const runs = await Promise.all(ids.map((id) => ctl.hgetall(runKeys(stack.prefix, id).run)));
        for (const run of runs) {
          expect(run.status).toBe('completed');
          // The workload every scenario measures: 3 rounds of 3 tool calls, then the answer.
          expect(Number(run['u:model_calls'])).toBe(h.STEPS);
          expect(Number(run['u:tool_calls'])).toBe(h.TOOL_CALLS);
        }
        // What the throughput scenarios read afterwards: each run's own created/completed times.
        for (const t of await h.agentqRunTimes(ctl, stack.prefix, ids)) {
          expect(t.status).toBe('completed');
          expect(t.completed).toBeGreaterThanOrEqual(t.created);
        }
      } finally {
        await stack.stop();
      }
    } finally {
      await ctl.quit();
      await waiter.quit();
      await redis.stop();
    }
  }, 60_000);

  it('judges each target from the numbers it measured', async () => {
    const { derive } = await load<Report>('../../bench/lib/report.mjs');
    const base = sampleResults();
    const target = (r: Results, name: string) => {
      const found = derive(r).targets.find((t) => t.name.startsWith(name));
      if (!found) throw new Error(`no target "${name}"`);
      return found;
    };
    const withOverhead = (agentqP50: number) => {
      const r = structuredClone(base);
      Object.assign(r.overhead.inproc, { p50: 10 });
      Object.assign(r.overhead.bare, { p50: 20 });
      Object.assign(r.overhead.agentq, { p50: agentqP50 });
      return r;
    };
    // 4 steps: bare 5 ms a step; agentq (p50 − in-process) / 4.
    expect(target(withOverhead(38), 'per-step overhead')).toMatchObject({
      ok: true,
      value: expect.stringContaining('7.00 ms vs 5.00 ms = 1.4×'),
    });
    expect(target(withOverhead(42), 'per-step overhead')).toMatchObject({
      ok: false,
      value: expect.stringContaining('= 1.6×'),
    });

    const withThroughput = (agentq: number) => {
      const r = structuredClone(base);
      r.throughput[0].agentq.runsPerSec = agentq;
      r.throughput[0].bare.runsPerSec = 100;
      return r;
    };
    expect(target(withThroughput(55), 'throughput').ok).toBe(true);
    expect(target(withThroughput(45), 'throughput').ok).toBe(false);

    const withPeak = (mb: number) => {
      const r = structuredClone(base);
      for (const m of r.concurrency.memory) if (m.name.startsWith('agent-worker')) m.peak = mb;
      return r;
    };
    expect(target(withPeak(299), 'agent-worker peak RSS').ok).toBe(true);
    expect(target(withPeak(301), 'agent-worker peak RSS').ok).toBe(false);

    // Scenario 5, side by side: the ratios are the means of the windows' ratios.
    const withRedisBound = (agentq: [number, number], agentqUs: number) => {
      const w = (runsPerSec: number, redisUsPerStep: number) => ({
        runsPerSec,
        redisUsPerStep,
        wallMs: 1,
        redisBusy: 1,
      });
      const r = structuredClone(base);
      r.redisBound = {
        cap: 0.12,
        runs: 1000,
        pairs: {
          loop: agentq.map((a) => ({ agentq: w(a, agentqUs), loop: w(50, 800) })),
          bare: [{ agentq: w(60, agentqUs), bare: w(100, 500) }],
        },
      };
      return r;
    };
    expect(target(withRedisBound([55, 65], 650), 'throughput ≥ 1.2× the BullMQ loop, Redis-bound')).toMatchObject({
      ok: true,
      value: expect.stringContaining('1.20× (windows 1.10, 1.30'),
    });
    expect(target(withRedisBound([55, 63], 650), 'throughput ≥ 1.2× the BullMQ loop, Redis-bound').ok).toBe(false);
    expect(target(withRedisBound([55, 65], 650), 'Redis CPU per step ≤ 1.3× bare BullMQ, Redis-bound')).toMatchObject({
      ok: true,
      value: expect.stringContaining('1.30× (windows 1.30'),
    });
    expect(target(withRedisBound([55, 65], 655), 'Redis CPU per step ≤ 1.3× bare BullMQ, Redis-bound').ok).toBe(false);
  });

  it('writes a short page: each figure beside its baselines, under the command that measures it again', async () => {
    const { derive, markdown } = await load<Report>('../../bench/lib/report.mjs');
    const r = sampleResults();
    const page: string = markdown(r, derive(r));
    const lines = page.split('\n');
    expect(lines.length).toBeLessThanOrEqual(200);
    expect(page).not.toMatch(/session/i);
    // Every scenario: a heading, the command that runs it alone, a table whose rows name agentq's
    // figure and its baselines'.
    for (const [n, baseline] of [
      ['1', 'bare BullMQ 20.0 / 40.0 ms'],
      ['2', 'bare BullMQ 400 runs/s'],
      ['3', 'in-process 4.00 s'],
      ['4', 'bare BullMQ 500 µs'],
      ['5', 'BullMQ loop 50.0'],
    ]) {
      const at = lines.findIndex((l) => l.startsWith(`### ${n}. `));
      expect(at, `scenario ${n}`).toBeGreaterThan(0);
      const section = lines.slice(
        at,
        lines.findIndex((l, i) => i > at && l.startsWith('#')),
      );
      expect(section.join('\n')).toContain(`\`BENCH_ONLY=${n} npm run bench\``);
      expect(section.join('\n')).toContain(baseline);
    }
    expect(page).toMatch(
      /\| 1000 concurrent runs at 500 ms within 1\.3× the in-process loop +\| 5\.00 s vs 4\.00 s = 1\.3×/,
    );
    // Every page it links to is in the repository.
    const links = [...page.matchAll(/\]\(([^)#]+)(#[^)]*)?\)/g)].map((m) => m[1]);
    expect(links.length).toBeGreaterThan(5);
    for (const link of links) expect(existsSync(new URL(`../../${link}`, import.meta.url)), link).toBe(true);
  });

  it('compares two checkouts: this ÷ other for the overhead per step and the Redis cost', async () => {
    const { compareText } = await load<Report>('../../bench/lib/report.mjs');
    const window = (runs: number, commands: number, trips: number) => ({
      runs,
      steps: runs * 4,
      serverCommands: commands * runs * 4,
      trips: trips * runs * 4,
    });
    // Only the fields compareText reads; each checkout's Redis cost once (it takes one or a list).
    const results = {
      roots: { this: '/a', other: '/b' },
      commits: { this: 'aaa', other: 'bbb' },
      steps: 4,
      mcpTransport: 'stdio',
      blocks: 2,
      perBlock: 3,
      latency: {
        inproc: { n: 200, p50: 10, p90: 20 },
        this: { n: 200, p50: 50, p90: 80 },
        other: { n: 200, p50: 30, p90: 60 },
      },
      times: { inproc: [], this: [10, 20, 30, 40, 50, 60], other: [5, 10, 15, 40, 40, 40] },
      redis: {
        this: { sequential: window(50, 260, 24), batch: window(200, 200, 15) },
        other: { sequential: window(50, 130, 20), batch: window(200, 250, 12) },
      },
    };
    const text = compareText(results as unknown as CompareResults);
    const row = (start: string) =>
      text
        .split('\n')
        .find((l) => l.startsWith(start))!
        .trimEnd()
        .split(/ {2,}/);
    expect(row('run, 0 ms model')).toEqual([
      'run, 0 ms model, one at a time, p50 / p90 (ms)',
      '50.0 / 80.0',
      '30.0 / 60.0',
      '1.67 / 1.33',
    ]);
    // (50 − 10) / 4 = 10 against (30 − 10) / 4 = 5; (80 − 20) / 4 = 15 against (60 − 20) / 4 = 10.
    expect(row('overhead per step')).toEqual([
      'overhead per step, (run − in-process) ÷ 4, p50 / p90 (ms)',
      '10.0 / 15.0',
      '5.00 / 10.0',
      '2.00 / 1.50',
    ]);
    expect(row('Redis commands per step (incl. inside Lua), one at a time').slice(1)).toEqual(['260', '130', '2.00']);
    expect(row('round trips per step, 200 at once').slice(1)).toEqual(['15.0', '12.0', '1.25']);
    // Block p50s: 20 / 10 = 2 and 50 / 40 = 1.25.
    expect(text).toContain("this ÷ other of each block's p50 run: median 1.25, middle half 1.25–2.00 (2 blocks)");
  });

  it('draws its chart as well-formed SVG whose bars are as long as their numbers', async () => {
    const { barChartSVG } = await load<SvgChart>('../../bench/lib/svg-chart.mjs');
    const svg: string = barChartSVG({
      title: 'test chart <&>',
      subtitle: 'two panels',
      panels: [
        {
          title: 'latency',
          rows: [
            { label: 'alpha', value: 10, mark: 20, color: '#336699', note: '10 / 20 ms' },
            { label: 'beta', value: 5, color: '#993333' },
          ],
        },
        {
          title: 'throughput',
          rows: [
            { label: 'gamma', value: 100, color: '#339933', note: '100' },
            { label: 'delta', value: 25, color: '#339933' },
          ],
        },
      ],
    });
    const root = parseXml(svg);
    expect(root.name).toBe('svg');
    expect(root.attrs.xmlns).toBe('http://www.w3.org/2000/svg');
    const width = Number(root.attrs.width);
    expect(svg).not.toMatch(/<script|<image|<foreignObject|href=|url\(|@import|@font-face/i);
    expect(textOf(root)).toContain('test chart <&>');

    const panels = all(root, (e) => e.attrs.class === 'panel');
    expect(
      panels.map((p) => textOf(p.children.find((c): c is El => typeof c !== 'string' && c.name === 'text')!)),
    ).toEqual(['latency', 'throughput']);
    const expected = [
      [
        ['alpha', 10],
        ['beta', 5],
      ],
      [
        ['gamma', 100],
        ['delta', 25],
      ],
    ] as const;
    panels.forEach((panel, i) => {
      const bars = all(panel, (e) => e.name === 'rect' && e.attrs.class === 'bar');
      expect(bars).toHaveLength(expected[i].length);
      const texts = all(panel, (e) => e.name === 'text');
      const scale = Number(bars[0].attrs.width) / expected[i][0][1];
      bars.forEach((bar, j) => {
        const [label, value] = expected[i][j];
        // One scale per panel: every bar's length is its value times it, and all start at one x.
        expect(Number(bar.attrs.width)).toBeCloseTo(value * scale, 0);
        expect(bar.attrs.x).toBe(bars[0].attrs.x);
        // Its label sits on its row, left of it.
        const y = Number(bar.attrs.y);
        const h = Number(bar.attrs.height);
        const row = texts.filter((t) => Number(t.attrs.y) > y && Number(t.attrs.y) <= y + h).map(textOf);
        expect(row).toContain(label);
      });
      // Every bar stays inside the picture.
      const ends = bars.map((b) => Number(b.attrs.x) + Number(b.attrs.width));
      expect(Math.max(...ends)).toBeLessThanOrEqual(width);
    });
    // alpha's p99-style tick ends at 20 on the same scale as its bar of 10.
    const [alpha] = all(panels[0], (e) => e.attrs.class === 'bar');
    const mark = all(panels[0], (e) => e.attrs.class === 'mark')[0];
    const tickX = Number(/H([\d.]+)/.exec(mark.attrs.d)![1]);
    expect(tickX - Number(alpha.attrs.x)).toBeCloseTo(2 * Number(alpha.attrs.width), 0);
    expect(textOf(panels[0])).toContain('10 / 20 ms');

    // The run's chart draws the measured numbers: scenario 1's bars are the p50s, in order.
    const { chart } = await load<Report>('../../bench/lib/report.mjs');
    const r = sampleResults();
    const [first] = all(parseXml(chart(r)), (e) => e.attrs.class === 'panel');
    const p50s = (['inproc', 'bare', 'loop', 'agentq'] as const).map((k) => r.overhead[k].p50);
    const widths = all(first, (e) => e.attrs.class === 'bar').map((b) => Number(b.attrs.width));
    expect(widths).toHaveLength(4);
    for (const [j, w] of widths.entries()) expect(w / widths[3]).toBeCloseTo(p50s[j] / p50s[3], 2);
    expect(textOf(first)).toContain('agentq');
  });
});

/** Made-up results of a full run, in the shape bench/run.mjs writes them. */
function sampleResults(): Results & Required<Pick<Results, 'overhead' | 'throughput' | 'concurrency' | 'redis'>> {
  const latency = (p50: number, p99 = 2 * p50) => ({ n: 200, p50, p90: p50, p99, min: p50, max: p99, mean: p50 });
  const window = (runsPerSec: number, cpuMs: Record<string, number>, wallMs = 1000) => ({
    label: 'window',
    n: 1000,
    wallMs,
    submitMs: 100,
    runsPerSec,
    toolCallsPerSec: 9 * runsPerSec,
    latency: latency(wallMs / 2),
    statuses: { completed: 1000 },
    cpuMs,
    foreignShare: 0.01,
    repetitions: [
      { runsPerSec, wallMs, p50: wallMs / 2, p99: wallMs, foreignShare: 0.01 },
      { runsPerSec: runsPerSec / 2, wallMs: 2 * wallMs, p50: wallMs, p99: 2 * wallMs, foreignShare: 0.01 },
    ],
  });
  const throughput = (workers: number) => ({
    workers,
    agentq: window(200, { 'agent-worker': 3000, 'tool-worker': 1500, 'redis-server': 1500 }),
    bare: window(400, { 'bare agent-worker': 1500, 'redis-server': 1500 }),
    loop: window(160, { 'loop agent-worker': 4500, 'redis-server': 2000 }),
    inproc: window(300, { 'in-process loop (bench)': 3000 }),
  });
  const redisWindow = (runs: number, cpuUsPerStep: number) => ({
    runs,
    steps: 4 * runs,
    serverCommands: 120 * 4 * runs,
    server: {},
    clientCommands: { 'evalsha:moveToFinished': 7 * runs },
    trips: 12 * 4 * runs,
    byProcess: { 'agent-worker': { trips: 8 * runs, commands: 30 * runs, byCommand: {} } },
    redisCpuMs: (cpuUsPerStep * 4 * runs) / 1000,
    redisReads: runs,
    redisWrites: runs,
    bytesIn: 10_000 * runs,
    aofBytes: 10_000 * runs,
  });
  const cost = (us: number) => ({ sequential: redisWindow(50, 3 * us), batch: redisWindow(1000, us) });
  const memory = (agentPeak: number) =>
    ['tool-worker', 'agent-worker', 'api'].map((name) => ({
      name,
      started: 120,
      peak: name === 'agent-worker' ? agentPeak : 200,
      rss: 180,
      heap: { usedMB: 60, totalMB: 100, liveMB: 30 },
    }));
  const capped = (runsPerSec: number, redisUsPerStep: number) => ({
    runsPerSec,
    redisUsPerStep,
    wallMs: 1,
    redisBusy: 1,
  });
  return {
    quick: false,
    startedAt: '2026-01-01T00:00:00.000Z',
    durationS: 600,
    machine: {
      nproc: 2,
      cpu: 'a CPU',
      ramGiB: 16,
      os: 'Linux',
      node: 'v24',
      redis: '7.0',
      redisSetup: 'own redis-server',
      bullmq: '6',
      ioredis: '6',
      mcpSdk: '1',
      openai: '7',
      commit: 'abc1234',
    },
    config: {
      repeat: 2,
      heapFlags: '--max-old-space-size=384',
      rounds: 3,
      fanout: 3,
      steps: 4,
      toolCallsPerRun: 9,
      mcpTransport: 'stdio',
    },
    overhead: {
      interleaved: { blocks: 8, perBlock: 25 },
      inproc: latency(10),
      bare: latency(20),
      loop: latency(30),
      agentq: latency(40),
      slow: { modelMs: 500, inproc: latency(2010), loop: latency(2020), agentq: latency(2030) },
    },
    throughput: [throughput(1), throughput(2)],
    concurrency: {
      modelMs: 500,
      idealMs: 2000,
      sizes: [100, 1000],
      alternated: true,
      inproc: { 100: window(45, {}, 2200), 1000: window(250, {}, 4000) },
      loop: { 1000: window(150, {}, 6000) },
      agentq: { 100: window(40, {}, 2500), 1000: window(200, {}, 5000) },
      config: { agentWorkers: 1, agentConcurrency: 1000, toolConcurrency: 100 },
      heapFlags: '--max-old-space-size=384',
      memory: memory(250),
      v8Defaults: { agentq: window(230, {}, 4500), memory: memory(440) },
      scaleOut: { slots: 50, n: 200, runs: { 1: window(24, {}, 8400), 2: window(44, {}, 4500) } },
    },
    redis: { agentq: cost(400), bare: cost(500), loop: cost(600), again: { agentq: cost(400), bare: cost(500) } },
    redisBound: {
      cap: 0.12,
      runs: 1000,
      pairs: {
        loop: [{ agentq: capped(60, 500), loop: capped(50, 600) }],
        bare: [{ agentq: capped(60, 500), bare: capped(55, 550) }],
      },
    },
    foreign: [{ label: 'scenario 1, one at a time', share: 0.01 }],
  };
}

type El = { name: string; attrs: Record<string, string>; children: Array<El | string> };

const unescapeXml = (s: string) =>
  s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[e as 'lt']);

/** A strict parser for the XML subset an SVG chart uses; throws on anything not well-formed. */
function parseXml(src: string): El {
  const token =
    /<\?xml[^?]*\?>|<!--[\s\S]*?-->|<(\/?)([A-Za-z][\w:.-]*)((?:\s+[A-Za-z][\w:.-]*="[^"<]*")*)\s*(\/?)>|([^<]+)/y;
  const doc: El = { name: '#document', attrs: {}, children: [] };
  const stack = [doc];
  for (let at = 0; at < src.length; ) {
    token.lastIndex = at;
    const m = token.exec(src);
    if (!m) throw new Error(`not well-formed at ${at}: ${src.slice(at, at + 40)}`);
    at = token.lastIndex;
    const [, close, name, attrText, selfClosing, text] = m;
    const badAmp = /&(?!(lt|gt|quot|apos|amp|#\d+|#x[\da-f]+);)/i;
    if (text !== undefined) {
      if (badAmp.test(text)) throw new Error(`bare & in ${text}`);
      if (stack.length === 1 && text.trim()) throw new Error(`text outside the root: ${text}`);
      stack.at(-1)!.children.push(unescapeXml(text));
    } else if (close) {
      const open = stack.pop()!;
      if (open.name !== name || stack.length === 0) throw new Error(`</${name}> closes <${open.name}>`);
    } else if (name) {
      const attrs: Record<string, string> = {};
      for (const [, k, v] of attrText.matchAll(/([\w:.-]+)="([^"]*)"/g)) {
        if (k in attrs) throw new Error(`attribute ${k} twice on <${name}>`);
        if (badAmp.test(v)) throw new Error(`bare & in ${k}="${v}"`);
        attrs[k] = unescapeXml(v);
      }
      const el: El = { name, attrs, children: [] };
      stack.at(-1)!.children.push(el);
      if (!selfClosing) stack.push(el);
    }
  }
  if (stack.length !== 1) throw new Error(`<${stack.at(-1)!.name}> not closed`);
  const roots = doc.children.filter((c): c is El => typeof c !== 'string');
  if (roots.length !== 1) throw new Error(`${roots.length} root elements`);
  return roots[0];
}

const all = (e: El, pick: (e: El) => boolean): El[] =>
  e.children.flatMap((c) => (typeof c === 'string' ? [] : [...(pick(c) ? [c] : []), ...all(c, pick)]));
const textOf = (e: El): string =>
  e.children.map((c) => (typeof c === 'string' ? c : c.name === 'title' ? '' : textOf(c))).join('');

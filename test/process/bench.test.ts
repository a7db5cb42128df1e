import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { runKeys } from '@agentq/shared';

// The benchmark (`npm run bench`) is not part of the suite; these tests keep its parts working:
// the harness against the built services, the judgement of the targets, the SVG chart.

// The benchmark is plain JavaScript: what these tests use of its modules.
interface AgentqStack {
  prefix: string;
  stop(): Promise<void>;
}
interface Harness {
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
  startAgentq(
    ctl: Redis,
    url: string,
    opts: { agentConcurrency: number; toolConcurrency: number },
  ): Promise<AgentqStack>;
  submitAgentqRun(stack: AgentqStack, input: string): Promise<string>;
  waitAgentqRun(waiter: Redis, stack: AgentqStack, id: string): Promise<unknown>;
  agentqRunTimes(
    ctl: Redis,
    prefix: string,
    ids: string[],
  ): Promise<Array<{ status: string; created: number; completed: number }>>;
  STEPS: number;
  TOOL_CALLS: number;
}
interface Report {
  derive(results: unknown): { targets: Array<{ name: string; ok: boolean; value: string }> };
  compareText(c: Record<string, unknown>): string;
  chart(results: unknown): string;
}
interface SvgChart {
  barChartSVG(spec: {
    title: string;
    subtitle?: string;
    panels: Array<{
      title: string;
      rows: Array<{ label: string; value: number; mark?: number; color: string; note?: string }>;
    }>;
    width?: number;
  }): string;
}
const load = <T>(path: string): Promise<T> => import(new URL(path, import.meta.url).href);

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
    const base = JSON.parse(readFileSync(new URL('../../bench/results/latest.json', import.meta.url), 'utf8'));
    const target = (r: unknown, name: string) => derive(r).targets.find((t) => t.name.startsWith(name))!;
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

    // Scenario 5: each system's two windows are averaged.
    const withRedisBound = (agentq: [number, number], agentqUs: number) => {
      const w = (runsPerSec: number, redisUsPerStep: number) => ({
        runsPerSec,
        redisUsPerStep,
        wallMs: 1,
        redisBusy: 1,
        statuses: {},
      });
      return {
        ...structuredClone(base),
        redisBound: {
          cap: 0.2,
          runs: 1000,
          bare: [w(90, 500), w(110, 500)],
          loop: [w(40, 800), w(60, 800)],
          agentq: agentq.map((r) => w(r, agentqUs)),
        },
      };
    };
    expect(target(withRedisBound([55, 65], 650), 'throughput ≥ 1.2× the BullMQ loop, Redis-bound')).toMatchObject({
      ok: true,
      value: expect.stringContaining('60.0 vs 50.0 runs/s = 1.20×'),
    });
    expect(target(withRedisBound([55, 63], 650), 'throughput ≥ 1.2× the BullMQ loop, Redis-bound').ok).toBe(false);
    expect(target(withRedisBound([55, 65], 650), 'Redis CPU per step ≤ 1.3× bare BullMQ, Redis-bound')).toMatchObject({
      ok: true,
      value: expect.stringContaining('650 vs 500 µs = 1.30×'),
    });
    expect(target(withRedisBound([55, 65], 655), 'Redis CPU per step ≤ 1.3× bare BullMQ, Redis-bound').ok).toBe(false);
  });

  it('compares two checkouts: this ÷ other for the overhead per step and the Redis cost', async () => {
    const { compareText } = await load<Report>('../../bench/lib/report.mjs');
    const window = (runs: number, commands: number, trips: number) => ({
      runs,
      steps: runs * 4,
      serverCommands: commands * runs * 4,
      trips: trips * runs * 4,
    });
    const text = compareText({
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
    });
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
    const svg = barChartSVG({
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

    // BENCHMARKS.md's chart draws the measured numbers: scenario 1's bars are the p50s, in order.
    const { chart } = await load<Report>('../../bench/lib/report.mjs');
    const r = JSON.parse(readFileSync(new URL('../../bench/results/latest.json', import.meta.url), 'utf8'));
    const [first] = all(parseXml(chart(r)), (e) => e.attrs.class === 'panel');
    const p50s = ['inproc', 'bare', 'loop', 'agentq'].map((k) => r.overhead[k].p50);
    const widths = all(first, (e) => e.attrs.class === 'bar').map((b) => Number(b.attrs.width));
    expect(widths).toHaveLength(4);
    for (const [j, w] of widths.entries()) expect(w / widths[3]).toBeCloseTo(p50s[j] / p50s[3], 2);
    expect(textOf(first)).toContain('agentq');
  });
});

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

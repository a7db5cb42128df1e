import { inflateSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';

// The benchmark (`npm run bench`) is not part of the suite; these tests keep its parts working:
// the harness against the built services, the judgement of the targets, the PNG chart.
const load = (path: string): Promise<any> => import(new URL(path, import.meta.url).href);

describe('the benchmark', () => {
  it('runs agentq as built processes on a Redis of its own and sees its runs finish', async () => {
    const h = await load('../../bench/lib/harness.mjs');
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
        const runs = await Promise.all(ids.map((id) => ctl.hgetall(`${stack.prefix}:r:{${id}}:run`)));
        for (const run of runs) {
          expect(run.status).toBe('completed');
          // The workload every scenario measures: 3 rounds of 3 tool calls, then the answer.
          expect(Number(run['u:model_calls'])).toBe(h.TURNS);
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
    const { derive } = await load('../../bench/lib/report.mjs');
    const base = JSON.parse(readFileSync(new URL('../../bench/results/latest.json', import.meta.url), 'utf8'));
    const target = (r: any, name: string) => derive(r).targets.find((t: any) => t.name.startsWith(name));
    const withOverhead = (agentqP50: number) => {
      const r = structuredClone(base);
      Object.assign(r.overhead.inproc, { p50: 10 });
      Object.assign(r.overhead.bare, { p50: 20 });
      Object.assign(r.overhead.agentq, { p50: agentqP50 });
      return r;
    };
    // 4 turns: bare 5 ms a turn; agentq (p50 − in-process) / 4.
    expect(target(withOverhead(38), 'per-turn overhead')).toMatchObject({ ok: true, value: expect.stringContaining('7.00 ms vs 5.00 ms = 1.4×') });
    expect(target(withOverhead(42), 'per-turn overhead')).toMatchObject({ ok: false, value: expect.stringContaining('= 1.6×') });

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
  });

  it('draws its chart as a valid PNG', async () => {
    const { barChartPNG } = await load('../../bench/lib/png-chart.mjs');
    const width = 640;
    const png: Buffer = barChartPNG({
      title: 'test chart',
      subtitle: 'two panels',
      width,
      panels: [
        { title: 'latency', unit: 'ms', rows: [{ label: 'a', value: 10, mark: 20, color: '#336699', note: '10 ms' }, { label: 'b', value: 5, color: '#993333' }] },
        { title: 'throughput', unit: 'runs/s', rows: [{ label: 'c', value: 100, color: '#339933', note: '100' }] },
      ],
    });
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    // Walk the chunks: each has a valid CRC; IHDR first, IEND last.
    const chunks: Array<{ type: string; data: Buffer }> = [];
    for (let at = 8; at < png.length; ) {
      const len = png.readUInt32BE(at);
      const type = png.toString('latin1', at + 4, at + 8);
      const data = png.subarray(at + 8, at + 8 + len);
      expect(png.readUInt32BE(at + 8 + len), `CRC of ${type}`).toBe(crc32(png.subarray(at + 4, at + 8 + len)));
      chunks.push({ type, data });
      at += 12 + len;
    }
    expect(chunks[0].type).toBe('IHDR');
    expect(chunks.at(-1)!.type).toBe('IEND');
    const ihdr = chunks[0].data;
    expect(ihdr.readUInt32BE(0)).toBe(width);
    const height = ihdr.readUInt32BE(4);
    expect(height).toBeGreaterThan(100);
    const [bitDepth, colorType] = [ihdr[8], ihdr[9]];
    expect(bitDepth).toBe(8);
    const channels = colorType === 2 ? 3 : colorType === 6 ? 4 : NaN;
    const pixels = inflateSync(Buffer.concat(chunks.filter((c) => c.type === 'IDAT').map((c) => c.data)));
    expect(pixels.length).toBe(height * (1 + width * channels));
    // Not blank: the bars' colours are there.
    expect(pixels.includes(Buffer.from([0x33, 0x66, 0x99]))).toBe(true);
  });
});

function crc32(buf: Buffer): number {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

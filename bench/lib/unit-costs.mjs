// @ts-check
// Unit costs (scenario 1): what one Redis round trip, one model call and one MCP tool call cost
// the benchmark process, one at a time; they explain most of the CPU tables.
import { Redis } from 'ioredis';
import { sleep } from './procs.mjs';

/**
 * CPU (of this process, the client side) and wall time per operation, measured one at a time.
 * @param {Pick<import('./types.d.ts').Ctx, 'redis' | 'QUICK' | 'MCP' | 'log'>} ctx
 * @param {import('./batch.mjs').Inproc['loop']} loop
 * @returns {Promise<import('./types.d.ts').UnitCost[]>}
 */
export async function unitCosts({ redis, QUICK, MCP, log }, loop) {
  const redisClient = new Redis(redis.url, { maxRetriesPerRequest: null });
  await redisClient.hset('bench-unit', 'f', 'x'.repeat(200));
  /** @param {string} label @param {number} n @param {() => Promise<unknown>} fn */
  const measure = async (label, n, fn) => {
    for (let i = 0; i < Math.min(200, n); i++) await fn();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await fn();
    const c = process.cpuUsage(c0);
    return { label, n, cpuMs: (c.user + c.system) / 1000 / n, wallMs: (performance.now() - t0) / n };
  };
  // A hand-off to a process that has been idle a few ms costs more wall time than a
  // back-to-back one (the one-at-a-time scenario is made of such hand-offs): time only the call.
  /** @param {string} label @param {number} n @param {() => Promise<unknown>} fn */
  const afterIdle = async (label, n, fn) => {
    let wall = 0;
    let cpu = 0;
    for (let i = 0; i < n; i++) {
      await sleep(5);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await fn();
      wall += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpu += (c.user + c.system) / 1000;
    }
    return { label, n, cpuMs: cpu / n, wallMs: wall / n };
  };
  const out = [
    await measure('Redis round trip (HGET), client CPU', QUICK ? 1000 : 5000, () =>
      redisClient.hget('bench-unit', 'f'),
    ),
    await measure('model call, openai SDK, streamed (tool calls)', QUICK ? 200 : 1000, () => loop.callModel('bench')),
    await measure('MCP tool call, MCP SDK client over ' + MCP, QUICK ? 200 : 1000, () => loop.callTool()),
    await afterIdle('model call, streamed, 5 ms after the last one (processes idle)', QUICK ? 100 : 300, () =>
      loop.callModel('bench'),
    ),
    await afterIdle('Redis round trip (HGET), 5 ms after the last one', QUICK ? 100 : 300, () =>
      redisClient.hget('bench-unit', 'f'),
    ),
  ];
  await redisClient.del('bench-unit');
  redisClient.disconnect();
  for (const u of out) log(`  unit cost: ${u.label}: ${u.cpuMs.toFixed(3)} ms CPU, ${u.wallMs.toFixed(3)} ms wall`);
  return out;
}

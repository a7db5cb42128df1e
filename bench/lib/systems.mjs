// @ts-check
// The three queued systems the Redis scenarios (4 and 5) compare, and the order scenario 4
// measures them in: agentq, bare BullMQ flows and the BullMQ loop, each started on a Redis.
import { Redis } from 'ioredis';
import { startAgentq } from './start-agentq.mjs';
import { startBare } from './start-bare.mjs';

/**
 * How to start each system (`probeDir`: with the Redis probe loaded, scenario 4).
 * @param {Pick<import('./types.d.ts').RunCtx, 'ctl' | 'redis' | 'MCP'>} ctx
 * @returns {Record<'bare' | 'loop' | 'agentq', (probeDir?: string) => Promise<import('./types.d.ts').Stack>>}
 */
export function systemStarts({ ctl, redis, MCP }) {
  return {
    bare: (probeDir) => startBare(ctl, redis.url, { probeDir }),
    // The same flows making the same model and MCP calls, no store: what real work does to a queue's cost.
    loop: (probeDir) => startBare(ctl, redis.url, { probeDir, work: true, mcpTransport: MCP }),
    agentq: (probeDir) => startAgentq(ctl, redis.url, { probeDir, mcpTransport: MCP }),
  };
}

/**
 * Each system twice, each time on an emptied Redis: Redis's speed drifts from one window to the
 * next, and in this order each system's two windows straddle the others' alike.
 */
export const TWICE = /** @type {const} */ (['bare', 'loop', 'agentq', 'agentq', 'loop', 'bare']);

/**
 * What a measurement outside `bench/run.mjs` passes where it takes the benchmark's context: a
 * Redis of its own (`redis`, from startRedis), connections to it, the stdio MCP server, one window
 * per measurement, and no noise watch. `close()` ends the connections (not the server).
 * @param {import('./types.d.ts').BenchRedis} redis
 * @returns {import('./types.d.ts').RunCtx & { close: () => void }}
 */
export function soloContext(redis) {
  const ctl = new Redis(redis.url);
  const waiter = new Redis(redis.url);
  return {
    ctl,
    waiter,
    redis,
    redisProc: redis.pid ? [{ name: 'redis-server', pid: redis.pid }] : [],
    log: () => {},
    MCP: 'stdio',
    REPEAT: 1,
    HTTP_CONCURRENCY: 64,
    quiet: async () => {},
    noteForeign: () => {},
    close() {
      ctl.disconnect();
      waiter.disconnect();
    },
  };
}

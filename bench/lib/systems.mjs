// The three queued systems the Redis scenarios (4 and 5) compare, and the order they measure
// them in: agentq, bare BullMQ flows and the BullMQ loop, each started on the bench's Redis.
import { startAgentq } from './start-agentq.mjs';
import { startBare } from './start-bare.mjs';

/** How to start each system (`probeDir`: with the Redis probe loaded, scenario 4). */
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
export const TWICE = ['bare', 'loop', 'agentq', 'agentq', 'loop', 'bare'];

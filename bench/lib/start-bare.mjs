// @ts-check
// The bare-BullMQ baselines: agentq's job graph on BullMQ alone (bench/bare-worker.mjs), with
// no-op processors (bare BullMQ) or processors that do the agent loop's work (the BullMQ loop).
import { join } from 'node:path';
import { spawnProc, stopProc } from './procs.mjs';
import { NODE, newPrefix, probeImport, stackHandle, startMcp, startModel, workersReady } from './stack.mjs';
import { BENCH, FANOUT, QUEUES, ROUNDS } from './workload.mjs';

/**
 * Starts the bare-BullMQ baseline: agent-role worker processes × agentWorkers and one tool-role
 * process. `work` makes it the BullMQ-loop baseline (bench/bare-worker.mjs WORK=1): the same
 * processes also call the scripted model and the no-op MCP server, which it starts.
 * @param {import('ioredis').Redis} ctl
 * @param {string} redisUrl
 * @param {{ tag?: string, agentWorkers?: number, agentConcurrency?: number, toolConcurrency?: number, probeDir?: string, work?: boolean, mcpTransport?: string }} options
 * @returns {Promise<import('./types.d.ts').Stack>}
 */
export async function startBare(
  ctl,
  redisUrl,
  {
    tag,
    agentWorkers = 1,
    agentConcurrency = 100,
    toolConcurrency = 100,
    probeDir,
    work = false,
    mcpTransport = 'stdio',
  } = {},
) {
  const prefix = newPrefix(tag ?? (work ? 'loop' : 'bare'));
  const model = work ? await startModel() : null;
  const mcp = work ? await startMcp(mcpTransport) : null;
  /** @param {string} role @param {number} concurrency */
  const env = (role, concurrency) => ({
    PATH: process.env.PATH,
    ROLE: role,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    CONCURRENCY: String(concurrency),
    ROUNDS: String(ROUNDS),
    FANOUT: String(FANOUT),
    ...(model && mcp ? { WORK: '1', MODEL_URL: model.baseURL, MCP_JSON: JSON.stringify(mcp.config) } : {}),
    ...(probeDir ? { NODE_OPTIONS: probeImport(probeDir), BENCH_PROBE_DIR: probeDir } : {}),
  });
  const script = join(BENCH, 'bare-worker.mjs');
  const name = work ? 'loop' : 'bare';
  const services = [];
  for (let i = 1; i <= agentWorkers; i++)
    services.push(
      spawnProc(agentWorkers > 1 ? `${name} agent-worker-${i}` : `${name} agent-worker`, NODE, [script], {
        env: env('agent', agentConcurrency),
      }),
    );
  const tool = spawnProc(`${name} tool-worker`, NODE, [script], { env: env('tool', toolConcurrency) });
  services.push(tool);
  const others = [model?.proc, mcp?.proc].filter((p) => p != null);
  try {
    await workersReady(ctl, prefix, { [QUEUES.agent]: agentWorkers, [QUEUES.tool]: 1 });
  } catch (err) {
    await Promise.all([...services, ...others].map((p) => stopProc(p, 2000)));
    throw err;
  }
  const config = { agentWorkers, agentConcurrency, toolConcurrency, ...(work ? { mcpTransport } : {}) };
  return stackHandle(ctl, {
    kind: work ? 'loop' : 'bare',
    prefix,
    config,
    services,
    others,
    tool,
    stdioMcp: work && !mcp?.proc,
  });
}

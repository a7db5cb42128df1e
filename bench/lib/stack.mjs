// @ts-check
// What every system under measurement is made of: the scripted model and the no-op MCP server
// in processes of their own, a key prefix of its own on the shared Redis, and the handle the
// scenarios hold a started stack by (agentq's and the bare baselines' alike).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue } from 'bullmq';
import { childPids, firstJsonLine, spawnProc, stopProc, until } from './procs.mjs';
import { deletePrefix } from './redis-server.mjs';
import { BENCH, FANOUT, QUEUES, ROUNDS } from './workload.mjs';

/** @import { McpConfig, Proc, Spawned, Stack } from './types.d.ts' */

export const NODE = process.execPath;

/** The scripted model in its own process; resolves with { proc, baseURL }. */
export async function startModel() {
  const proc = spawnProc('model', NODE, [join(BENCH, 'llm-server.mjs')], {
    env: { PATH: process.env.PATH, LATENCY_MS: '0', ROUNDS: String(ROUNDS), FANOUT: String(FANOUT) },
  });
  const { baseURL } = await firstJsonLine(proc);
  return { proc, baseURL };
}

/**
 * How the no-op MCP server is reached: stdio (spawned by its client) or Streamable HTTP (a process of ours).
 * @param {string} transport
 * @returns {Promise<{ proc: Spawned | null, config: McpConfig }>}
 */
export async function startMcp(transport) {
  const script = join(BENCH, 'noop-mcp-server.mjs');
  if (transport === 'stdio') return { proc: null, config: { command: NODE, args: [script] } };
  const proc = spawnProc('mcp-server', NODE, [script, '--http', '0'], { env: { PATH: process.env.PATH } });
  const { url } = await firstJsonLine(proc);
  return { proc, config: { url } };
}

export const newPrefix = (/** @type {string} */ tag) => `bench-${tag}-${randomBytes(3).toString('hex')}`;

/**
 * Waits until each queue has as many workers as `counts` says.
 * @param {import('./types.d.ts').Client} ctl
 * @param {string} prefix
 * @param {Record<string, number>} counts
 */
export async function workersReady(ctl, prefix, counts) {
  for (const [queue, n] of Object.entries(counts)) {
    const q = new Queue(queue, { connection: ctl, prefix });
    try {
      await until(`${n} ${queue} worker(s)`, async () => (await q.getWorkersCount()) >= n, 30_000, 100);
    } finally {
      await q.close();
    }
  }
}

/**
 * What scenarios use of a started stack: its processes by name (`tool`'s stdio MCP servers
 * included), the pids of its services, and `stop()`, which stops them all and deletes its keys.
 * @param {import('./types.d.ts').Client} ctl
 * @param {{
 *   kind: Stack['kind'],
 *   prefix: string,
 *   queuePrefix?: string,
 *   config: Record<string, unknown>,
 *   services: Spawned[],
 *   others: Spawned[],
 *   tool: Spawned,
 *   stdioMcp: boolean,
 *   queues?: { agent: string },
 *   deleteKeys?: boolean,
 *   cleanup?: () => void,
 * }} parts
 * @returns {Stack}
 */
export function stackHandle(
  ctl,
  {
    kind,
    prefix,
    queuePrefix = prefix,
    config,
    services,
    others,
    tool,
    stdioMcp,
    queues = QUEUES,
    deleteKeys = true,
    cleanup = () => {},
  },
) {
  return {
    kind,
    prefix,
    config,
    /** The agent queue's completed set, whose size tells how many step jobs have finished. */
    queuePrefix,
    completedKey: `${queuePrefix}:${queues.agent}:completed`,
    processes() {
      /** @type {Proc[]} */
      const list = [...services, ...others].filter((p) => p.running).map((p) => ({ name: p.name, pid: p.pid }));
      if (stdioMcp) for (const pid of childPids(tool.pid)) list.push({ name: 'mcp-server (stdio)', pid });
      return list;
    },
    servicePids: () => services.filter((p) => p.running).map((p) => p.pid),
    async stop() {
      await Promise.all(services.map((p) => stopProc(p)));
      await Promise.all(others.map((p) => stopProc(p)));
      cleanup();
      if (deleteKeys) await deletePrefix(ctl, prefix);
    },
  };
}

/** NODE_OPTIONS that load the Redis probe (redis-probe.mjs) into a process, when `probeDir` asks for it. */
export const probeImport = (/** @type {string | undefined} */ probeDir) =>
  probeDir ? `--import ${pathToFileURL(join(BENCH, 'lib', 'redis-probe.mjs')).href}` : '';

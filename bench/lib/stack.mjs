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

export const NODE = process.execPath;

/** The scripted model in its own process; resolves with { proc, baseURL }. */
export async function startModel() {
  const proc = spawnProc('model', NODE, [join(BENCH, 'llm-server.mjs')], {
    env: { PATH: process.env.PATH, LATENCY_MS: '0', ROUNDS: String(ROUNDS), FANOUT: String(FANOUT) },
  });
  const { baseURL } = await firstJsonLine(proc);
  return { proc, baseURL };
}

/** How the no-op MCP server is reached: stdio (spawned by its client) or Streamable HTTP (a process of ours). */
export async function startMcp(transport) {
  const script = join(BENCH, 'noop-mcp-server.mjs');
  if (transport === 'stdio') return { proc: null, config: { command: NODE, args: [script] } };
  const proc = spawnProc('mcp-server', NODE, [script, '--http', '0'], { env: { PATH: process.env.PATH } });
  const { url } = await firstJsonLine(proc);
  return { proc, config: { url } };
}

export const newPrefix = (tag) => `bench-${tag}-${randomBytes(3).toString('hex')}`;

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
export const probeImport = (probeDir) =>
  probeDir ? `--import ${pathToFileURL(join(BENCH, 'lib', 'redis-probe.mjs')).href}` : '';

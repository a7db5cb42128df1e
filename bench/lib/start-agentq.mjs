// @ts-check
// The system under measurement: agentq's built services as processes, on the scripted model and
// the no-op MCP server.
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { spawnProc, stopProc, tmpDir, until } from './procs.mjs';
import { NODE, newPrefix, probeImport, stackHandle, startMcp, startModel, workersReady } from './stack.mjs';
import { ROOT, shared, sharedOf } from './workload.mjs';
import { freePort, serviceNodeOptions } from '../../scripts/lib/services.mjs';

/**
 * A module of the checkout at `root` (built), or of this one.
 * @param {string} root
 * @param {string} file
 */
const importFrom = (root, file) => import(pathToFileURL(join(root, file)).href);

/** BENCH_SERVICE_ENV="NAME=value NAME2=value": settings for the services under test (an A/B of a setting). */
function serviceEnv() {
  /** @type {Record<string, string>} */
  const out = {};
  for (const pair of (process.env.BENCH_SERVICE_ENV ?? '').split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new Error(`BENCH_SERVICE_ENV: "${pair}" is not NAME=value`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/**
 * Starts agentq as built processes (api, agent-worker × agentWorkers, tool-worker) with the
 * scripted model and the no-op MCP server. `probeDir` loads the Redis probe into every service.
 * The services get the NODE_OPTIONS `npm start` and the Dockerfile give them (the shipped V8
 * heap sizing) unless BENCH_NODE_OPTIONS sizes the heap, or `v8Heap` asks for V8's defaults.
 * `root` runs the services, queue names and heap flags of another built checkout of agentq.
 * `cells` sets CELLS (a Redis Cluster spreads the cells' queues over its shards); `env` adds to
 * the services' environment; `deleteKeys: false` leaves the keys at stop (a Redis of the
 * benchmark's own, which is thrown away whole).
 * @param {import('./types.d.ts').Client} ctl
 * @param {string} redisUrl
 * @param {{
 *   root?: string, tag?: string, agentWorkers?: number, agentConcurrency?: number, toolConcurrency?: number,
 *   mcpTransport?: string, probeDir?: string, nodeOptions?: string, v8Heap?: boolean, cells?: number,
 *   env?: Record<string, string>, deleteKeys?: boolean,
 * }} options
 * @returns {Promise<import('./types.d.ts').AgentqStack>}
 */
export async function startAgentq(
  ctl,
  redisUrl,
  {
    root = ROOT,
    tag = 'agentq',
    agentWorkers = 1,
    agentConcurrency = 100,
    toolConcurrency = 100,
    mcpTransport = 'stdio',
    probeDir,
    nodeOptions = '',
    v8Heap = false,
    cells = 1,
    env: extraEnv = {},
    deleteKeys = true,
  } = {},
) {
  /** @type {typeof shared} */
  const agentqShared = root === ROOT ? shared : await sharedOf(root);
  const { QUEUES: queues } = agentqShared;
  const { serviceNodeOptions: heapOptions } =
    root === ROOT ? { serviceNodeOptions } : await importFrom(root, 'scripts/lib/services.mjs');
  const prefix = newPrefix(tag);
  const model = await startModel();
  const mcp = await startMcp(mcpTransport);
  const others = [model.proc, ...(mcp.proc ? [mcp.proc] : [])];
  const mcpFile = join(tmpdir(), `${prefix}-mcp.json`);
  writeFileSync(tmpDir(mcpFile), JSON.stringify({ mcpServers: { noop: mcp.config } }));
  // Per-key admission runs as deployed, but its limits must not be what is measured.
  const tenantsFile = join(tmpdir(), `${prefix}-tenants.json`);
  writeFileSync(
    tenantsFile,
    JSON.stringify({
      default: { max_active_runs: 1_000_000, max_queued_runs: 10_000_000, requests_per_minute: 10_000_000 },
    }),
  );
  const port = await freePort();
  const given = [process.env.BENCH_NODE_OPTIONS ?? '', nodeOptions, probeImport(probeDir)].filter(Boolean).join(' ');
  const options = v8Heap ? given : heapOptions(given);
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? '/tmp',
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    PORT: String(port),
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: model.baseURL,
    OPENAI_API_KEY: 'bench',
    MODEL: 'bench',
    MCP_CONFIG: mcpFile,
    TENANTS_CONFIG: tenantsFile,
    LOG_LEVEL: 'warn',
    AGENT_CONCURRENCY: String(agentConcurrency),
    TOOL_CONCURRENCY: String(toolConcurrency),
    ...(options ? { NODE_OPTIONS: options } : {}),
    ...(probeDir ? { BENCH_PROBE_DIR: probeDir } : {}),
    ...(cells > 1 ? { CELLS: String(cells) } : {}),
    ...serviceEnv(),
    ...extraEnv,
  };
  const svc = (/** @type {string} */ name, file = name.replace(/-\d+$/, '')) =>
    spawnProc(name, NODE, [join(root, 'services', file, 'dist', 'main.js')], { env });
  const services = [];
  try {
    const tool = svc('tool-worker');
    services.push(tool);
    await until(
      'the tool catalog',
      async () => JSON.parse((await ctl.get(`${prefix}:tool-catalog`)) ?? '[]').length > 0,
      30_000,
    );
    for (let i = 1; i <= agentWorkers; i++)
      services.push(svc(agentWorkers > 1 ? `agent-worker-${i}` : 'agent-worker', 'agent-worker'));
    services.push(svc('api'));
    const apiUrl = `http://127.0.0.1:${port}`;
    await until('the api', async () => (await fetch(`${apiUrl}/readyz`)).ok, 30_000, 100);
    // The checkout's own key layout: its queues' prefix (a cell's, where it has cells) and its run keys.
    const queuePrefix = agentqShared.cellPrefix ? agentqShared.cellPrefix(prefix, 0) : prefix;
    for (let cell = 0; cell < cells; cell++) {
      const name = (/** @type {string} */ q) =>
        agentqShared.cellQueueName ? agentqShared.cellQueueName(q, cell, cells) : q;
      await workersReady(ctl, agentqShared.cellPrefix ? agentqShared.cellPrefix(prefix, cell) : prefix, {
        [name(queues.agent)]: agentWorkers,
        [name(queues.tool)]: 1,
      });
    }
    const config = { agentWorkers, agentConcurrency, toolConcurrency, mcpTransport, cells };
    const handle = stackHandle(ctl, {
      kind: 'agentq',
      prefix,
      queuePrefix,
      config,
      services,
      others,
      tool,
      stdioMcp: !mcp.proc,
      queues,
      deleteKeys,
      cleanup: () => {
        for (const f of [mcpFile, tenantsFile]) rmSync(f, { force: true });
      },
    });
    return { ...handle, apiUrl, runKeys: (/** @type {string} */ id) => agentqShared.runKeys(prefix, id) };
  } catch (err) {
    await Promise.all([...services, ...others].map((p) => stopProc(p, 2000)));
    throw err;
  }
}

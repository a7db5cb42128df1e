// What the scenarios run on: a Redis of the benchmark's own, the agentq services as built
// processes, the bare-BullMQ baseline workers, the scripted model, the no-op MCP server, and
// the ways to submit runs and see them finish.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { childPids, cpuMs, firstJsonLine, machineBusyMs, memMB, sleep, spawnProc, stopProc, tmpDir } from './procs.mjs';
import { pool } from './stats.mjs';
import { freePort, serviceNodeOptions } from '../../scripts/lib/services.mjs';

export const ROOT = join(import.meta.dirname, '..', '..');
const BENCH = join(ROOT, 'bench');
const shared = await import(pathToFileURL(join(ROOT, 'packages/shared/dist/index.js')).href);
// Ids, names and options of the jobs, from agentq's job catalog (the bare baselines use the same).
const { JOB_KINDS } = shared;
export const jobIds = { agentTurn: (runId, depth) => JOB_KINDS.agentStep.id({ runId, depth }), toolCall: (runId, depth, index) => JOB_KINDS.toolCall.id({ runId, depth, index }) };
export const jobNames = { agentTurn: (runId, depth) => JOB_KINDS.agentStep.name({ runId, depth }), toolCall: (runId, depth, name) => JOB_KINDS.toolCall.name({ runId, depth, name }) };
export const jobOptions = { agentTurn: JOB_KINDS.agentStep.options, toolCall: JOB_KINDS.toolCall.options };
export const { QUEUES } = shared;

export const ROUNDS = 3;
export const FANOUT = 3;
/** Model steps per run: the tool rounds and the final answer. */
export const STEPS = ROUNDS + 1;
export const TOOL_CALLS = ROUNDS * FANOUT;
const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.incomplete']);
const NODE = process.execPath;

const until = async (what, fn, timeoutMs = 20_000, everyMs = 50) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await fn()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
};

// ---------------------------------------------------------------------------------------------
// Redis

/** Starts a redis-server of our own (AOF on, as in docker-compose.yml), or uses BENCH_REDIS_URL. */
export async function startRedis() {
  if (process.env.BENCH_REDIS_URL) {
    return { url: process.env.BENCH_REDIS_URL, own: false, pid: null, stop: async () => {} };
  }
  const port = await freePort();
  const dir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-redis-')));
  const proc = spawnProc('redis-server', 'redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec',
    '--maxmemory-policy', 'noeviction', '--dir', dir, '--loglevel', 'warning',
  ]);
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await until('redis-server', async () => {
      if (!proc.running) throw new Error('gone');
      if (probe.status !== 'ready') await probe.connect();
      return (await probe.ping()) === 'PONG';
    }, 10_000);
  } catch (err) {
    await stopProc(proc);
    throw new Error(`could not start redis-server (install redis-server, or set BENCH_REDIS_URL): ${proc.tail.join(' ')} ${err.message}`);
  } finally {
    probe.disconnect();
  }
  return {
    url,
    own: true,
    pid: proc.pid,
    async stop() {
      await stopProc(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `INFO commandstats` as { name: { calls, usec } }. */
export async function commandStats(redis) {
  const text = await redis.info('commandstats');
  const out = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return out;
}

/** Deletes every key under a prefix (SCAN + UNLINK), so a shared Redis is left as it was. */
export async function deletePrefix(redis, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

// ---------------------------------------------------------------------------------------------
// Processes of a stack

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

const newPrefix = (tag) => `bench-${tag}-${randomBytes(3).toString('hex')}`;

async function workersReady(ctl, prefix, counts) {
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
function stackHandle(ctl, { kind, prefix, config, services, others, tool, stdioMcp, queues = QUEUES, cleanup = () => {} }) {
  return {
    kind,
    prefix,
    config,
    /** The agent queue's completed set, whose size tells how many step jobs have finished. */
    completedKey: `${prefix}:${queues.agent}:completed`,
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
      await deletePrefix(ctl, prefix);
    },
  };
}

const probeImport = (probeDir) => (probeDir ? `--import ${pathToFileURL(join(BENCH, 'lib', 'redis-probe.mjs')).href}` : '');

/** A module of the checkout at `root` (built), or of this one. */
const importFrom = (root, file) => import(pathToFileURL(join(root, file)).href);

/**
 * Starts agentq as built processes (api, agent-worker × agentWorkers, tool-worker) with the
 * scripted model and the no-op MCP server. `probeDir` loads the Redis probe into every service.
 * The services get the NODE_OPTIONS `npm start` and the Dockerfile give them (the shipped V8
 * heap sizing) unless BENCH_NODE_OPTIONS sizes the heap, or `v8Heap` asks for V8's defaults.
 * `root` runs the services, queue names and heap flags of another built checkout of agentq.
 */
export async function startAgentq(ctl, redisUrl, { root = ROOT, tag = 'agentq', agentWorkers = 1, agentConcurrency = 100, toolConcurrency = 100, mcpTransport = 'stdio', probeDir, nodeOptions = '', v8Heap = false } = {}) {
  const { QUEUES: queues } = root === ROOT ? shared : await importFrom(root, 'packages/shared/dist/index.js');
  const { serviceNodeOptions: heapOptions } = root === ROOT ? { serviceNodeOptions } : await importFrom(root, 'scripts/lib/services.mjs');
  const prefix = newPrefix(tag);
  const model = await startModel();
  const mcp = await startMcp(mcpTransport);
  const others = [model.proc, ...(mcp.proc ? [mcp.proc] : [])];
  const mcpFile = join(tmpdir(), `${prefix}-mcp.json`);
  writeFileSync(tmpDir(mcpFile), JSON.stringify({ mcpServers: { noop: mcp.config } }));
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
    LOG_LEVEL: 'warn',
    AGENT_CONCURRENCY: String(agentConcurrency),
    TOOL_CONCURRENCY: String(toolConcurrency),
    ...(options ? { NODE_OPTIONS: options } : {}),
    ...(probeDir ? { BENCH_PROBE_DIR: probeDir } : {}),
  };
  const svc = (name, file = name.replace(/-\d+$/, '')) => spawnProc(name, NODE, [join(root, 'services', file, 'dist', 'main.js')], { env });
  const services = [];
  try {
    const tool = svc('tool-worker');
    services.push(tool);
    await until('the tool catalog', async () => JSON.parse((await ctl.get(`${prefix}:tool-catalog`)) ?? '[]').length > 0, 30_000);
    for (let i = 1; i <= agentWorkers; i++) services.push(svc(agentWorkers > 1 ? `agent-worker-${i}` : 'agent-worker', 'agent-worker'));
    services.push(svc('api'));
    const apiUrl = `http://127.0.0.1:${port}`;
    await until('the api', async () => (await fetch(`${apiUrl}/readyz`)).ok, 30_000, 100);
    await workersReady(ctl, prefix, { [queues.agent]: agentWorkers, [queues.tool]: 1 });
    const config = { agentWorkers, agentConcurrency, toolConcurrency, mcpTransport };
    return { ...stackHandle(ctl, { kind: 'agentq', prefix, config, services, others, tool, stdioMcp: !mcp.proc, queues, cleanup: () => rmSync(mcpFile, { force: true }) }), apiUrl };
  } catch (err) {
    await Promise.all([...services, ...others].map((p) => stopProc(p, 2000)));
    throw err;
  }
}

/**
 * Starts the bare-BullMQ baseline: agent-role worker processes × agentWorkers and one tool-role
 * process. `work` makes it the BullMQ-loop baseline (bench/bare-worker.mjs WORK=1): the same
 * processes also call the scripted model and the no-op MCP server, which it starts.
 */
export async function startBare(ctl, redisUrl, { tag, agentWorkers = 1, agentConcurrency = 100, toolConcurrency = 100, probeDir, work = false, mcpTransport = 'stdio' } = {}) {
  const prefix = newPrefix(tag ?? (work ? 'loop' : 'bare'));
  const model = work ? await startModel() : null;
  const mcp = work ? await startMcp(mcpTransport) : null;
  const env = (role, concurrency) => ({
    PATH: process.env.PATH,
    ROLE: role,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: prefix,
    CONCURRENCY: String(concurrency),
    ROUNDS: String(ROUNDS),
    FANOUT: String(FANOUT),
    ...(work ? { WORK: '1', MODEL_URL: model.baseURL, MCP_JSON: JSON.stringify(mcp.config) } : {}),
    ...(probeDir ? { NODE_OPTIONS: probeImport(probeDir), BENCH_PROBE_DIR: probeDir } : {}),
  });
  const script = join(BENCH, 'bare-worker.mjs');
  const name = work ? 'loop' : 'bare';
  const services = [];
  for (let i = 1; i <= agentWorkers; i++) services.push(spawnProc(agentWorkers > 1 ? `${name} agent-worker-${i}` : `${name} agent-worker`, NODE, [script], { env: env('agent', agentConcurrency) }));
  const tool = spawnProc(`${name} tool-worker`, NODE, [script], { env: env('tool', toolConcurrency) });
  services.push(tool);
  const others = [model?.proc, mcp?.proc].filter(Boolean);
  try {
    await workersReady(ctl, prefix, { [QUEUES.agent]: agentWorkers, [QUEUES.tool]: 1 });
  } catch (err) {
    await Promise.all([...services, ...others].map((p) => stopProc(p, 2000)));
    throw err;
  }
  const config = { agentWorkers, agentConcurrency, toolConcurrency, ...(work ? { mcpTransport } : {}) };
  return stackHandle(ctl, { kind: work ? 'loop' : 'bare', prefix, config, services, others, tool, stdioMcp: work && !mcp.proc });
}

// ---------------------------------------------------------------------------------------------
// Submitting runs and seeing them finish

const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function postJson(url, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = http.request(url, { method: 'POST', agent: httpAgent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode, json: JSON.parse(text) });
        } catch (err) {
          reject(new Error(`POST ${url} → ${res.statusCode}: ${text.slice(0, 200)}`));
        }
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** POST /v1/runs; resolves with the run id. */
export async function submitAgentqRun(stack, model) {
  const res = await postJson(`${stack.apiUrl}/v1/runs`, { input: 'benchmark', model, max_depth: 10 });
  if (res.status !== 202) throw new Error(`POST /v1/runs → ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
  return res.json.id;
}

/**
 * Waits for a run's terminal event by reading its event stream (XREAD BLOCK) straight from
 * Redis: what an SSE client sees, without the API in between.
 */
export async function waitAgentqRun(waiter, stack, runId, timeoutMs = 60_000) {
  const key = `${stack.prefix}:r:{${runId}}:events`;
  let last = '0-0';
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await waiter.xread('COUNT', 100, 'BLOCK', Math.max(1, deadline - Date.now()), 'STREAMS', key, last);
    if (!res) throw new Error(`run ${runId} did not finish within ${timeoutMs} ms`);
    for (const [id, fields] of res[0][1]) {
      last = id;
      const type = fields[fields.indexOf('type') + 1];
      if (TERMINAL.has(type)) return type;
    }
  }
}

/** Submits one agentq run and waits for its terminal event; throws unless it completed. */
export async function agentqOnce(waiter, stack, model = 'bench') {
  const id = await submitAgentqRun(stack, model);
  const type = await waitAgentqRun(waiter, stack, id);
  if (type !== 'run.completed') throw new Error(`run ${id} ended as ${type}`);
  return id;
}

/** The bare baseline's client: adds each run's first step job, and hears its last one finish. */
export async function bareClient(redisUrl, stack) {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null, connectionName: 'bench-submit' });
  const queue = new Queue(QUEUES.agent, { connection, prefix: stack.prefix });
  let events = null;
  let eventsConnection = null;
  const pending = new Map();
  let seq = 0;
  const tag = randomBytes(3).toString('hex');
  return {
    queue,
    newId: () => `b${tag}x${(seq++).toString(36)}`,
    add: (runId, model) => queue.add(jobNames.agentTurn(runId, 0), { runId, depth: 0, ...(model ? { model } : {}) }, { ...jobOptions.agentTurn, jobId: jobIds.agentTurn(runId, 0) }),
    /** Adds one run and resolves when its last step job has completed (QueueEvents); `model` for the BullMQ loop. */
    async once(model) {
      if (!events) {
        eventsConnection = new Redis(redisUrl, { maxRetriesPerRequest: null, connectionName: 'bench-events' });
        events = new QueueEvents(QUEUES.agent, { connection: eventsConnection, prefix: stack.prefix });
        events.on('completed', ({ jobId }) => pending.get(jobId)?.());
        await events.waitUntilReady();
        await sleep(200);
      }
      const runId = this.newId();
      const done = new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`bare run ${runId} did not finish`)), 60_000);
        pending.set(jobIds.agentTurn(runId, ROUNDS), () => {
          clearTimeout(timer);
          resolve();
        });
      });
      await this.add(runId, model);
      await done;
      pending.delete(jobIds.agentTurn(runId, ROUNDS));
      return runId;
    },
    async close() {
      await events?.close();
      await queue.close();
      eventsConnection?.disconnect();
      connection.disconnect();
    },
  };
}

/**
 * Waits until a stack's agent queue has `target` completed jobs (ZCARD of its completed set: one
 * command per poll, whatever the number of runs). `onPoll` counts the polls.
 */
export async function waitCompleted(ctl, stack, target, { timeoutMs, everyMs = 25, onPoll = () => {}, stalled } = {}) {
  const key = stack.completedKey;
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    onPoll();
    const n = await ctl.zcard(key);
    if (n >= target) return n;
    if (n !== last) {
      last = n;
      lastChange = Date.now();
    } else if (stalled && Date.now() - lastChange > 5_000 && (await stalled())) {
      return n;
    }
    if (Date.now() > deadline) throw new Error(`only ${n} of ${target} step jobs completed in ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** Per-run times of agentq runs from their records: created_at → completed_at (ms), status. */
export async function agentqRunTimes(ctl, prefix, ids) {
  const pipe = ctl.pipeline();
  for (const id of ids) pipe.hmget(`${prefix}:r:{${id}}:run`, 'status', 'created_at', 'completed_at');
  const rows = await pipe.exec();
  return rows.map(([, [status, created, completed]]) => ({ status, created: Date.parse(created), completed: completed ? Date.parse(completed) : NaN }));
}

/** Per-run times of bare runs from their job hashes: first step job added → last one finished. */
export async function bareRunTimes(ctl, prefix, ids) {
  const pipe = ctl.pipeline();
  for (const id of ids) {
    pipe.hget(`${prefix}:${QUEUES.agent}:${jobIds.agentTurn(id, 0)}`, 'timestamp');
    pipe.hget(`${prefix}:${QUEUES.agent}:${jobIds.agentTurn(id, ROUNDS)}`, 'finishedOn');
  }
  const rows = await pipe.exec();
  return ids.map((_, i) => {
    const completed = Number(rows[2 * i + 1][1] ?? NaN);
    return { status: Number.isFinite(completed) ? 'completed' : 'unfinished', created: Number(rows[2 * i][1]), completed };
  });
}

/**
 * CPU ms so far of each process (and of this one), keyed by name; `machine` is the whole
 * machine's busy time, so that a window can tell how much CPU went to processes not ours.
 */
export function cpuSnapshot(processes, extra = []) {
  const out = {};
  Object.defineProperty(out, 'machine', { value: machineBusyMs(), enumerable: false });
  Object.defineProperty(out, 'at', { value: Date.now(), enumerable: false });
  for (const { name, pid } of [...processes, ...extra]) {
    const ms = cpuMs(pid);
    if (ms !== null) out[name] = (out[name] ?? 0) + ms;
  }
  const self = process.cpuUsage();
  out['bench (client)'] = (self.user + self.system) / 1000;
  return out;
}

export function cpuDelta(a, b) {
  const out = {};
  for (const k of Object.keys(b)) out[k] = b[k] - (a[k] ?? 0);
  return out;
}

/** The share of the machine (0..1) that processes other than ours used between two snapshots. */
export function foreignShare(a, b) {
  const ours = Object.values(cpuDelta(a, b)).reduce((x, y) => x + y, 0);
  const wall = b.at - a.at;
  if (wall <= 0) return 0;
  return Math.max(0, (b.machine - a.machine - ours) / (wall * os.availableParallelism()));
}

/**
 * Waits (up to `maxMs`) until the machine is quiet: other processes (builds, test suites of
 * people sharing it) using less than `threshold` of it over a second. Resolves with the share
 * seen last.
 */
export async function waitQuiet(ours = [], { threshold = 0.1, maxMs = 90_000 } = {}) {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const a = cpuSnapshot(ours);
    await sleep(1000);
    const share = foreignShare(a, cpuSnapshot(ours));
    if (share < threshold || Date.now() > deadline) return share;
  }
}

/** Peak and current RSS of each process, MB. */
export function memory(processes) {
  return processes.map(({ name, pid }) => ({ name, ...memMB(pid) }));
}

/** Signals every probed process to write its counters; resolves with them by pid. */
export async function readProbes(dir, pids) {
  const since = Date.now();
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  const out = {};
  await until('the Redis probes', async () => {
    for (const pid of pids) {
      const f = join(dir, `${pid}.json`);
      if (!existsSync(f)) return false;
      const v = JSON.parse(readFileSync(f, 'utf8'));
      if (v.at < since) return false;
      out[pid] = v;
    }
    return true;
  }, 10_000, 20);
  return out;
}

export { pool, sleep };

// @ts-check
// Submitting runs to a system and seeing them finish: agentq's through its API and its event
// streams, the bare baselines' by adding their first job and hearing their last; and each run's
// times afterwards, from what the system itself stored.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { sleep } from './procs.mjs';
import { jobIds, jobNames, jobOptions, QUEUES, ROUNDS, shared } from './workload.mjs';

/** @import { AgentqStack, RunTimes, Stack } from './types.d.ts' */

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.incomplete']);

const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * @param {string} url
 * @param {string} data
 * @returns {Promise<{ status: number | undefined, json: any }>}
 */
function postJsonOnce(url, data) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: httpAgent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode, json: JSON.parse(text) });
          } catch {
            reject(new Error(`POST ${url} → ${res.statusCode}: ${text.slice(0, 200)}`));
          }
        });
      },
    );
    req.on('error', (err) => reject(Object.assign(err, { reusedSocket: req.reusedSocket })));
    req.end(data);
  });
}

/**
 * POSTs JSON; sent again (once) when the kept-alive socket it went out on turned out to have
 * been closed by the server just before (the API drops sockets idle for 5 s, and the benchmark
 * idles between batches while it waits for a quiet machine): the server never read it.
 * @param {string} url
 * @param {unknown} body
 */
async function postJson(url, body) {
  const data = JSON.stringify(body);
  try {
    return await postJsonOnce(url, data);
  } catch (e) {
    const err = /** @type {NodeJS.ErrnoException & { reusedSocket?: boolean }} */ (e);
    if (!err.reusedSocket || !['ECONNRESET', 'EPIPE'].includes(err.code ?? '')) throw err;
    return postJsonOnce(url, data);
  }
}

/**
 * POST /v1/runs; resolves with the run id.
 * @param {AgentqStack} stack
 * @param {string} model
 * @returns {Promise<string>}
 */
export async function submitAgentqRun(stack, model) {
  const res = await postJson(`${stack.apiUrl}/v1/runs`, { input: 'benchmark', model, max_depth: 10 });
  if (res.status !== 202) throw new Error(`POST /v1/runs → ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
  return res.json.id;
}

/**
 * Waits for a run's terminal event by reading its event stream (XREAD BLOCK) straight from
 * Redis: what an SSE client sees, without the API in between.
 * @param {import('ioredis').Redis} waiter
 * @param {AgentqStack} stack
 * @param {string} runId
 */
export async function waitAgentqRun(waiter, stack, runId, timeoutMs = 60_000) {
  const key = stack.runKeys(runId).events;
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

/**
 * Submits one agentq run and waits for its terminal event; throws unless it completed.
 * @param {import('ioredis').Redis} waiter
 * @param {AgentqStack} stack
 */
export async function agentqOnce(waiter, stack, model = 'bench') {
  const id = await submitAgentqRun(stack, model);
  const type = await waitAgentqRun(waiter, stack, id);
  if (type !== 'run.completed') throw new Error(`run ${id} ended as ${type}`);
  return id;
}

/**
 * The bare baseline's client: adds each run's first step job, and hears its last one finish.
 * @param {string} redisUrl
 * @param {Stack} stack
 */
export async function bareClient(redisUrl, stack) {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null, connectionName: 'bench-submit' });
  const queue = new Queue(QUEUES.agent, { connection, prefix: stack.prefix });
  /** @type {QueueEvents | null} */
  let events = null;
  /** @type {Redis | null} */
  let eventsConnection = null;
  /** @type {Map<string, () => void>} */
  const pending = new Map();
  let seq = 0;
  const tag = randomBytes(3).toString('hex');
  return {
    queue,
    newId: () => `b${tag}x${(seq++).toString(36)}`,
    /** @param {string} runId @param {string} [model] */
    add: (runId, model) =>
      queue.add(
        jobNames.agentTurn(runId, 0),
        { runId, depth: 0, ...(model ? { model } : {}) },
        { ...jobOptions.agentTurn, jobId: jobIds.agentTurn(runId, 0) },
      ),
    /**
     * Adds one run and resolves when its last step job has completed (QueueEvents); `model` for the BullMQ loop.
     * @param {string} [model]
     */
    async once(model) {
      if (!events) {
        eventsConnection = new Redis(redisUrl, { maxRetriesPerRequest: null, connectionName: 'bench-events' });
        events = new QueueEvents(QUEUES.agent, { connection: eventsConnection, prefix: stack.prefix });
        events.on('completed', ({ jobId }) => pending.get(jobId)?.());
        await events.waitUntilReady();
        await sleep(200);
      }
      const runId = this.newId();
      /** @type {Promise<void>} */
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
 * command per poll, whatever the number of runs). `onPoll` counts the polls; `stalled`, asked
 * once nothing has completed for 5 s, may end the wait early.
 * @param {import('ioredis').Redis} ctl
 * @param {Stack} stack
 * @param {number} target
 * @param {{ timeoutMs: number, everyMs?: number, onPoll?: () => void, stalled?: () => Promise<boolean> }} options
 */
export async function waitCompleted(ctl, stack, target, { timeoutMs, everyMs = 25, onPoll = () => {}, stalled }) {
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

/**
 * Per-run times of agentq runs from their records: created_at → completed_at (ms), status.
 * @param {import('ioredis').Redis} ctl
 * @param {string} prefix
 * @param {string[]} ids
 * @returns {Promise<RunTimes[]>}
 */
export async function agentqRunTimes(ctl, prefix, ids) {
  const pipe = ctl.pipeline();
  for (const id of ids) pipe.hmget(shared.runKeys(prefix, id).run, 'status', 'created_at', 'completed_at');
  const rows = /** @type {Array<[Error | null, Array<string | null>]>} */ ((await pipe.exec()) ?? []);
  return rows.map(([, [status, created, completed]]) => ({
    status: status ?? 'unknown',
    created: Date.parse(created ?? ''),
    completed: completed ? Date.parse(completed) : NaN,
  }));
}

/**
 * Per-run times of bare runs from their job hashes: first step job added → last one finished.
 * @param {import('ioredis').Redis} ctl
 * @param {string} prefix
 * @param {string[]} ids
 * @returns {Promise<RunTimes[]>}
 */
export async function bareRunTimes(ctl, prefix, ids) {
  const pipe = ctl.pipeline();
  for (const id of ids) {
    pipe.hget(`${prefix}:${QUEUES.agent}:${jobIds.agentTurn(id, 0)}`, 'timestamp');
    pipe.hget(`${prefix}:${QUEUES.agent}:${jobIds.agentTurn(id, ROUNDS)}`, 'finishedOn');
  }
  const rows = /** @type {Array<[Error | null, string | null]>} */ ((await pipe.exec()) ?? []);
  return ids.map((_, i) => {
    const completed = Number(rows[2 * i + 1][1] ?? NaN);
    return {
      status: Number.isFinite(completed) ? 'completed' : 'unfinished',
      created: Number(rows[2 * i][1]),
      completed,
    };
  });
}

#!/usr/bin/env node
// @ts-check
// `npm run bench:waiting`: what runs that wait for people cost. On agentq's built services (as
// processes, its own redis-server, loopback only; stops by itself):
//
//   1. answer → tool call: runs whose first round's FANOUT calls all need approval; each run is
//      answered (all its requests in one POST) once it waits, and the time from sending the
//      answer to each call's `tool.started` (stamped by the tool-worker) is measured: one run
//      waiting at a time, then again while WAITING runs wait beside it;
//   2. WAITING runs waiting at once: the jobs they hold (active must be 0: every waiting call is a
//      delayed job), and the Redis memory per waiting run (used_memory before and after, and the
//      keys the waiting adds: requests, pending sets, inbox entries, delayed jobs);
//   3. all of them answered: every run completes.
//
// Prints a table and writes bench/results/waiting.json. Env: BENCH_WAITING=1000 (runs waiting at
// once), BENCH_ANSWERS=100 (answers timed in each part of 1), BENCH_QUICK=1 (200 / 30).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startRedis } from './lib/redis-server.mjs';
import { startAgentq } from './lib/start-agentq.mjs';
import { sleep } from './lib/procs.mjs';
import { quantile, textTable } from './lib/stats.mjs';
import { FANOUT, ROOT, shared } from './lib/workload.mjs';

/**
 * @import { Redis as Client } from 'ioredis'
 * @import { AgentqStack } from './lib/types.d.ts'
 * @typedef {{ n: number, p50: number, p99: number, max: number }} Latency
 * @typedef {{ id: string, [field: string]: unknown }} Item
 */

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const WAITING = Number(process.env.BENCH_WAITING) || (QUICK ? 200 : 1000);
const ANSWERS = Number(process.env.BENCH_ANSWERS) || (QUICK ? 30 : 100);
const log = (/** @type {string} */ s) =>
  process.stdout.write(`[${String(Math.round(process.uptime())).padStart(4)} s] ${s}\n`);

/**
 * @param {string} url
 * @param {unknown} body
 * @returns {Promise<{ status: number, json: any }>}
 */
const post = async (url, body) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
};

/**
 * Starts a run whose every call of its one round needs approval (then one last answer without tools).
 * @param {AgentqStack} stack
 * @returns {Promise<string>}
 */
async function submitWaiting(stack) {
  const res = await post(`${stack.apiUrl}/v1/runs`, {
    input: 'benchmark',
    max_depth: 1,
    approval: { tools: ['noop__*'] },
  });
  if (res.status !== 202) throw new Error(`POST /v1/runs → ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
  return res.json.id;
}

/**
 * Reads a run's events from Redis (XREAD BLOCK) until `pick` returns a value.
 * @template T
 * @param {Client} waiter
 * @param {AgentqStack} stack
 * @param {string} runId
 * @param {(type: string, data: any) => T} pick
 * @returns {Promise<NonNullable<T>>}
 */
async function follow(waiter, stack, runId, pick, timeoutMs = 60_000) {
  const key = stack.runKeys(runId).events;
  let last = '0-0';
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await waiter.xread('COUNT', 100, 'BLOCK', Math.max(1, deadline - Date.now()), 'STREAMS', key, last);
    if (!res) throw new Error(`run ${runId}: nothing after ${timeoutMs} ms`);
    for (const [id, fields] of res[0][1]) {
      last = id;
      const got = pick(fields[fields.indexOf('type') + 1], JSON.parse(fields[fields.indexOf('data') + 1]));
      if (got) return /** @type {NonNullable<T>} */ (got);
    }
  }
}

/**
 * @param {Client} waiter
 * @param {AgentqStack} stack
 * @param {string} runId
 * @returns {Promise<Item[]>}
 */
const requestsOf = (waiter, stack, runId) =>
  follow(waiter, stack, runId, (type, data) => (type === 'action.required' ? data.items : null));

/**
 * Approves every request of a waiting run in one POST; returns ms from sending it to each call's tool.started.
 * @param {Client} waiter
 * @param {AgentqStack} stack
 * @param {string} runId
 * @param {Item[]} items
 */
async function answerAndTime(waiter, stack, runId, items) {
  const sent = Date.now();
  const res = await post(`${stack.apiUrl}/v1/runs/${runId}/actions`, {
    responses: items.map((i) => ({ id: i.id, approve: true })),
  });
  if (res.status !== 200) throw new Error(`answer → ${res.status}: ${JSON.stringify(res.json).slice(0, 300)}`);
  /** @type {Map<number, number>} */
  const started = new Map();
  await follow(waiter, stack, runId, (type, data) => {
    if (type === 'tool.started') started.set(data.index, Date.parse(data.at));
    return started.size === items.length;
  });
  return [...started.values()].map((t) => t - sent);
}

/** @returns {Latency} */
const stats = (/** @type {number[]} */ xs) => ({
  n: xs.length,
  p50: quantile(xs, 0.5),
  p99: quantile(xs, 0.99),
  max: Math.max(...xs),
});

/**
 * Bytes Redis holds in these keys (MEMORY USAGE of each; a missing key counts 0).
 * @param {Client} ctl
 * @param {string[]} keys
 */
async function bytesOf(ctl, keys) {
  let bytes = 0;
  for (let i = 0; i < keys.length; i += 500) {
    const pipe = ctl.pipeline();
    for (const k of keys.slice(i, i + 500)) pipe.memory('USAGE', k, 'SAMPLES', '0');
    for (const [, v] of (await pipe.exec()) ?? []) bytes += Number(v) || 0;
  }
  return bytes;
}

const usedMemory = async (/** @type {Client} */ ctl) => Number(/used_memory:(\d+)/.exec(await ctl.info('memory'))?.[1]);

const redis = await startRedis();
const ctl = new Redis(redis.url);
const waiter = new Redis(redis.url);
const stack = await startAgentq(ctl, redis.url, {});
/**
 * @type {{
 *   waiting: number, answers: number, fanout: number, alone?: Latency, busy?: Latency, completed?: number,
 *   held?: { tool: Record<string, number>, agent: Record<string, number> },
 *   memory?: Record<'usedPerRun' | 'requestsPerRun' | 'pendingPerRun' | 'inboxTotal' | 'delayedJobsPerRun' | 'runKeysPerRun', number>,
 * }}
 */
const out = { waiting: WAITING, answers: ANSWERS, fanout: FANOUT };
try {
  log(`1. answer → tool call, one run waiting at a time: ${ANSWERS} runs × ${FANOUT} approvals`);
  /** @type {number[]} */
  const alone = [];
  for (let i = 0; i < ANSWERS; i++) {
    const id = await submitWaiting(stack);
    alone.push(...(await answerAndTime(waiter, stack, id, await requestsOf(waiter, stack, id))));
    await follow(waiter, stack, id, (type) => type === 'run.completed');
  }
  const aloneStats = stats(alone);
  out.alone = aloneStats;
  log(`   p50 ${aloneStats.p50} ms, p99 ${aloneStats.p99} ms`);

  log(`2. ${WAITING} runs waiting at once`);
  const before = await usedMemory(ctl);
  /** @type {string[]} */
  const ids = [];
  for (let i = 0; i < WAITING; i += 50)
    ids.push(...(await Promise.all(Array.from({ length: Math.min(50, WAITING - i) }, () => submitWaiting(stack)))));
  /** @type {Map<string, Item[]>} */
  const items = new Map();
  for (const id of ids) items.set(id, await requestsOf(waiter, stack, id));
  await sleep(500);
  const tool = new shared.JobQueues({
    connection: ctl,
    prefix: stack.prefix,
    logger: /** @type {import('@agentq/shared/infra').Logger} */ (
      /** @type {unknown} */ ({ warn() {}, error() {}, info() {}, debug() {} })
    ),
  });
  const counts = await tool.queue(shared.QUEUES.tool).getJobCounts('active', 'delayed', 'waiting');
  const agentCounts = await tool.queue(shared.QUEUES.agent).getJobCounts('active', 'waiting', 'waiting-children');
  await tool.close();
  const after = await usedMemory(ctl);
  // What the waiting itself adds, key by key, beside what any run at the same point holds.
  /**
   * @template K
   * @param {(keys: ReturnType<typeof shared.runKeys>) => K} pick
   */
  const keysOf = (pick) => ids.map((id) => pick(shared.runKeys(stack.prefix, id)));
  const per = (/** @type {number} */ bytes) => Math.round(bytes / WAITING);
  const delayedIds = await ctl.zrange(`${stack.queuePrefix}:${shared.QUEUES.tool}:delayed`, '0', '-1');
  out.held = { tool: counts, agent: agentCounts };
  const memory = {
    usedPerRun: per(after - before),
    requestsPerRun: per(
      await bytesOf(
        ctl,
        keysOf((k) => k.actions),
      ),
    ),
    pendingPerRun: per(
      await bytesOf(
        ctl,
        keysOf((k) => k.pendingActions),
      ),
    ),
    inboxTotal: await bytesOf(ctl, [
      shared.globalKeys(stack.prefix).actionInbox('open'),
      shared.globalKeys(stack.prefix).actionInboxPending('open'),
    ]),
    delayedJobsPerRun: per(
      await bytesOf(
        ctl,
        delayedIds.map((j) => `${stack.queuePrefix}:${shared.QUEUES.tool}:${j}`),
      ),
    ),
    runKeysPerRun: per(
      await bytesOf(ctl, keysOf((k) => [k.run, k.messages, k.steps, k.events, k.toolCalls(0)]).flat()),
    ),
  };
  log(`   jobs: tool ${JSON.stringify(counts)}, agent ${JSON.stringify(agentCounts)}`);
  out.memory = memory;
  log(`   Redis: ${memory.usedPerRun} B of used_memory per waiting run (${FANOUT} requests each)`);

  log(`3. answer → tool call with ${WAITING} waiting: ${ANSWERS} runs answered one at a time, then the rest at once`);
  /** @type {number[]} */
  const busy = [];
  for (const id of ids.slice(0, ANSWERS)) busy.push(...(await answerAndTime(waiter, stack, id, items.get(id) ?? [])));
  const busyStats = stats(busy);
  out.busy = busyStats;
  log(`   p50 ${busyStats.p50} ms, p99 ${busyStats.p99} ms`);
  const rest = ids.slice(ANSWERS);
  for (let i = 0; i < rest.length; i += 50) {
    await Promise.all(
      rest.slice(i, i + 50).map((id) =>
        post(`${stack.apiUrl}/v1/runs/${id}/actions`, {
          responses: (items.get(id) ?? []).map((a) => ({ id: a.id, approve: true })),
        }),
      ),
    );
  }
  let completed = 0;
  for (const id of ids)
    if (
      (await follow(waiter, stack, id, (type) =>
        type.startsWith('run.') && !['run.queued', 'run.started'].includes(type) ? type : null,
      )) === 'run.completed'
    )
      completed++;
  out.completed = completed;
  log(`   ${completed} of ${WAITING} runs completed`);
} finally {
  await stack.stop();
  ctl.disconnect();
  waiter.disconnect();
  await redis.stop();
}

const { alone, busy, held, memory: m, completed } = out;
if (!alone || !busy || !held || !m) throw new Error('bench:waiting did not measure everything');
process.stdout.write(
  `\n${textTable(
    ['measure', 'value'],
    [
      [
        'answer → tool.started, one run waiting (p50 / p99 / max)',
        `${alone.p50} / ${alone.p99} / ${alone.max} ms (${alone.n} calls)`,
      ],
      [
        `answer → tool.started, ${WAITING} runs waiting (p50 / p99 / max)`,
        `${busy.p50} / ${busy.p99} / ${busy.max} ms (${busy.n} calls)`,
      ],
      [
        `jobs held while ${WAITING} runs wait`,
        `tool: ${held.tool.active} active, ${held.tool.delayed} delayed; agent: ${held.agent.active} active, ${held.agent['waiting-children']} waiting-children`,
      ],
      ['Redis used_memory per waiting run', `${m.usedPerRun} B (${FANOUT} requests)`],
      ['  of it: delayed tool jobs', `${m.delayedJobsPerRun} B`],
      ['  requests (records + decisions), pending set', `${m.requestsPerRun} B + ${m.pendingPerRun} B`],
      ['  inbox entries (all runs)', `${m.inboxTotal} B`],
      ['  beside: the run itself (record, transcript, step, events, results)', `${m.runKeysPerRun} B`],
      ['runs completed after their answers', `${completed} of ${WAITING}`],
    ],
  )}\n`,
);
mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
writeFileSync(
  join(ROOT, 'bench', 'results', 'waiting.json'),
  `${JSON.stringify({ at: new Date().toISOString(), ...out }, null, 2)}\n`,
);

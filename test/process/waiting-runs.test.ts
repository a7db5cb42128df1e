import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { type RunObject } from '@agentq/shared/core';
import { createLogger } from '@agentq/shared/infra';
import { JobQueues, QUEUES } from '@agentq/shared/jobs';
import { startScriptedLlm, type ChatRequest, type Handler, type ScriptedLlm } from '@agentq/scripted-llm';
import { startCrmMcpServer, type CrmMcpServer } from '../fixtures/crm-mcp-server.js';
import { freePort } from '../fixtures/redis.js';
import { serviceGroup } from '../fixtures/processes.js';
import { waitFor } from '../fixtures/wait.js';
import { bodyOf, errorOf, type GetBody } from '../fixtures/api-client.js';

// Runs that wait for people, with real processes: nothing is held while they wait, so every
// worker may die, and the answers (from any API process) still carry every run to its end; a
// rejected call never reaches the tool's server, whatever crashed.

const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const firstUser = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;
// "write <key>": one non-idempotent write (which needs approval), then the tool message as the answer.
const handler: Handler = (req) =>
  round(req) === 0
    ? { tool_calls: [{ name: 'crm__non_idempotent_write', arguments: { key: firstUser(req).slice('write '.length) } }] }
    : { content: String(req.messages.at(-1)!.content) };

let llm: ScriptedLlm;
let crm: CrmMcpServer;
let env: Record<string, string>;
let redis: Redis;
let jobs: JobQueues;
const apiUrls: string[] = [];
const services = serviceGroup(() => env);
const start = services.start;
const startApi = async (extra: Record<string, string> = {}) => {
  const port = String(await freePort());
  const p = await start('api', { PORT: port, ...extra });
  return { proc: p, url: `http://127.0.0.1:${port}` };
};

beforeAll(async () => {
  llm = await startScriptedLlm({ handler });
  crm = await startCrmMcpServer();
  const dir = `/tmp/agentq-waiting-${randomBytes(4).toString('hex')}`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/mcp.json`, JSON.stringify({ mcpServers: { crm: { url: crm.url } } }));
  env = {
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: `wait${randomBytes(3).toString('hex')}`,
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'test',
    MODEL: 'scripted',
    MCP_CONFIG: `${dir}/mcp.json`,
    LOG_LEVEL: 'info',
    JOB_LOCK_MS: '1000',
    STALLED_INTERVAL_MS: '500',
    // The sweep that wakes the jobs of answers whose API process died runs often here.
    PENDING_SWEEP_INTERVAL_MS: '300',
    PENDING_SWEEP_GRACE_MS: '200',
  };
  redis = new Redis(env.REDIS_URL);
  jobs = new JobQueues({
    connection: redis,
    prefix: env.QUEUE_PREFIX,
    logger: createLogger({ service: 'test', level: 'silent' }),
  });
  for (let i = 0; i < 2; i++) apiUrls.push((await startApi()).url);
}, 60_000);

afterEach(() => services.killWorkers());

afterAll(async () => {
  await services.stopAll();
  await jobs?.close();
  await llm?.close();
  await crm?.close();
  redis?.disconnect();
});

const api = (i: number) => apiUrls[i % apiUrls.length];
const post = async (input: string) => {
  const res = await fetch(`${api(0)}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input, approval: { tools: ['crm__non_idempotent_write'] } }),
  });
  expect(res.status).toBe(202);
  return (await bodyOf<RunObject>(res)).id;
};
const get = async <P extends string>(path: P, at = 0): Promise<GetBody<P>> => bodyOf(await fetch(`${api(at)}${path}`));
const respond = (url: string, runId: string, responses: unknown[]) =>
  fetch(`${url}/v1/runs/${runId}/actions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ responses }),
  });
const waitingItem = (id: string) =>
  waitFor(
    async () => {
      const run = await get(`/v1/runs/${id}`);
      return run.status === 'requires_action' ? run.required_action?.items[0] : undefined;
    },
    { what: `run ${id} to wait`, timeoutMs: 15_000 },
  );
const ended = (ids: string[]) =>
  waitFor(
    async () => {
      const runs = await Promise.all(ids.map((id) => get(`/v1/runs/${id}`)));
      return runs.every((r) => ['completed', 'failed', 'cancelled', 'incomplete'].includes(r.status))
        ? runs
        : undefined;
    },
    { what: `${ids.length} runs to end`, timeoutMs: 40_000, intervalMs: 100 },
  );
const writesOf = (key: string) =>
  crm.calls.filter((c) => c.tool === 'non_idempotent_write' && c.args.key === key).length;

describe('runs that wait, across crashes', () => {
  it('kill -9 of every worker while 20 runs wait: ' +
    'answered from two API processes, every run ends, no rejected call ever runs', async () => {
    const agent = await start('agent-worker');
    const tool = await start('tool-worker');
    const keys = Array.from({ length: 20 }, (_, i) => `crash-${i}-${randomBytes(2).toString('hex')}`);
    const ids = await Promise.all(keys.map((k) => post(`write ${k}`)));
    const items = await Promise.all(ids.map(waitingItem));
    // While they wait, no job is active: each waiting call is a delayed job, holding nothing.
    const counts = await jobs.queue(QUEUES.tool).getJobCounts('active', 'delayed', 'waiting');
    expect(counts).toMatchObject({ active: 0, delayed: 20, waiting: 0 });
    await Promise.all([agent.kill('SIGKILL'), tool.kill('SIGKILL')]);

    // Answered with no worker alive, alternately through the two API processes.
    for (const [i, item] of items.entries()) {
      const res = await respond(api(i), ids[i], [
        i % 2 === 0 ? { id: item.id, approve: true } : { id: item.id, approve: false, reason: 'no' },
      ]);
      expect(res.status, await res.clone().text()).toBe(200);
    }
    await start('agent-worker');
    await start('tool-worker');
    const runs = await ended(ids);
    for (const [i, run] of runs.entries()) {
      expect(run.status, run.id).toBe('completed');
      if (i % 2 === 0) {
        expect(JSON.parse(run.output!.content!)).toContain(keys[i]);
        expect(writesOf(keys[i]), keys[i]).toBe(1);
      } else {
        expect(run.output?.content).toBe('The user rejected this call: no');
        expect(writesOf(keys[i]), keys[i]).toBe(0);
      }
    }
  }, 90_000);

  it('1,000 runs waiting at once hold no active job; answered, all complete', async () => {
    await start('agent-worker');
    await start('tool-worker');
    const n = 1000;
    const ids: string[] = [];
    for (let i = 0; i < n; i += 50)
      ids.push(
        ...(await Promise.all(Array.from({ length: Math.min(50, n - i) }, (_, j) => post(`write many-${i + j}`)))),
      );
    const pending = await waitFor(
      async () => {
        const page = await get(`/v1/actions?status=pending&limit=100`);
        const counts = await jobs.queue(QUEUES.tool).getJobCounts('delayed');
        return counts.delayed >= n ? page : undefined;
      },
      { what: `${n} waiting calls`, timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(pending.data).toHaveLength(100);
    // Every call waits as a delayed job; every next step waits for its round: nothing is active.
    expect(await jobs.queue(QUEUES.tool).getJobCounts('active', 'waiting')).toEqual({ active: 0, waiting: 0 });
    expect(await jobs.queue(QUEUES.agent).getJobCounts('active', 'waiting')).toEqual({ active: 0, waiting: 0 });
    for (let i = 0; i < n; i += 50) {
      await Promise.all(
        ids.slice(i, i + 50).map(async (id) => {
          const [item] = (await get(`/v1/runs/${id}`)).required_action!.items;
          expect((await respond(api(i), id, [{ id: item.id, approve: false, reason: 'bulk' }])).status).toBe(200);
        }),
      );
    }
    const runs = await ended(ids);
    expect(runs.filter((r) => r.status === 'completed')).toHaveLength(n);
    expect(crm.calls.filter((c) => String(c.args?.key).startsWith('many-'))).toEqual([]);
  }, 120_000);

  it('two API processes answering one request at once: exactly one gets 200, the other 409', async () => {
    await start('agent-worker');
    await start('tool-worker');
    const trials = 10;
    const keys = Array.from({ length: trials }, (_, i) => `race-${i}-${randomBytes(2).toString('hex')}`);
    const ids = await Promise.all(keys.map((k) => post(`write ${k}`)));
    const items = await Promise.all(ids.map(waitingItem));
    for (const [i, item] of items.entries()) {
      // One approves, the other rejects, at the same moment: whichever is stored first decides.
      const [a, b] = await Promise.all([
        respond(api(0), ids[i], [{ id: item.id, approve: true }]),
        respond(api(1), ids[i], [{ id: item.id, approve: false, reason: 'raced' }]),
      ]);
      expect([a.status, b.status].sort(), ids[i]).toEqual([200, 409]);
      const loser = a.status === 409 ? a : b;
      expect((await errorOf(loser)).code).toBe('action_resolved');
    }
    const runs = await ended(ids);
    for (const [i, run] of runs.entries()) {
      const approved = run.output?.content !== 'The user rejected this call: raced';
      // What the model saw and what the server did agree with the one decision stored.
      expect(writesOf(keys[i]), run.id).toBe(approved ? 1 : 0);
      const decision = (await get(`/v1/runs/${run.id}/steps`)).data[0].tool_calls[0].approval?.decision;
      expect(decision).toBe(approved ? 'approved' : 'rejected');
    }
  }, 90_000);

  it('an API process killed after storing an answer and before waking the job: the sweep of another wakes it', async () => {
    await start('agent-worker');
    await start('tool-worker');
    const dying = await startApi({ AGENTQ_FAILPOINT: 'action_decided' });
    const [approveKey, rejectKey] = [
      `dies-yes-${randomBytes(2).toString('hex')}`,
      `dies-no-${randomBytes(2).toString('hex')}`,
    ];
    const [yes, no] = await Promise.all([post(`write ${approveKey}`), post(`write ${rejectKey}`)]);
    const [yesItem, noItem] = await Promise.all([waitingItem(yes), waitingItem(no)]);
    // The process dies inside the request: the client never gets an answer.
    await expect(respond(dying.url, yes, [{ id: yesItem.id, approve: true }])).rejects.toThrow();
    expect((await dying.proc.exited).signal).toBe('SIGKILL');
    const second = await startApi({ AGENTQ_FAILPOINT: 'action_decided' });
    await expect(
      respond(second.url, no, [{ id: noItem.id, approve: false, reason: 'after a crash' }]),
    ).rejects.toThrow();
    // The decisions were stored: a late answer is refused, and the runs move on without any
    // further answer (the living API processes' sweeps wake the jobs).
    expect((await respond(api(0), yes, [{ id: yesItem.id, approve: false }])).status).toBe(409);
    const [y, n] = await ended([yes, no]);
    expect(y.status).toBe('completed');
    expect(writesOf(approveKey)).toBe(1);
    expect(n.output?.content).toBe('The user rejected this call: after a crash');
    expect(writesOf(rejectKey)).toBe(0);
  }, 90_000);
});

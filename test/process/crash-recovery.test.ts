import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ChatMessage, type RunObject } from '@agentq/shared/core';
import { createRedis, type RedisClient } from '@agentq/shared/infra';
import { RunStore } from '@agentq/shared/store';
import { startScriptedLlm, type ChatRequest, type Handler, type ScriptedLlm } from '@agentq/scripted-llm';
import { bodyOf, type GetBody } from '../fixtures/api-client.js';
import { startCrmMcpServer, type CrmMcpServer } from '../fixtures/crm-mcp-server.js';
import { freePort } from '../fixtures/redis.js';
import { serviceGroup } from '../fixtures/processes.js';
import { waitFor } from '../fixtures/wait.js';

// Real processes, killed with SIGKILL in the middle of their work.
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const firstUser = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;

const handler: Handler = (req) => {
  const u = firstUser(req);
  const r = round(req);
  if (u.startsWith('many ')) {
    if (r < 3)
      return {
        tool_calls: [
          { name: 'crm__sleep', arguments: { ms: 150, label: `${u}-${r}-a` } },
          { name: 'crm__sleep', arguments: { ms: 100, label: `${u}-${r}-b` } },
        ],
        delayMs: 100,
      };
    return { content: `done ${u}`, delayMs: 50 };
  }
  if (u === 'unsafe write')
    return r === 0
      ? { tool_calls: [{ name: 'crm__non_idempotent_write', arguments: { key: 'k1', ms: 4000 } }] }
      : { content: String(req.messages.at(-1)!.content) };
  if (u === 'unsafe write in a round')
    return r === 0
      ? {
          tool_calls: [
            { name: 'crm__non_idempotent_write', arguments: { key: 'k-round', ms: 4000 } },
            { name: 'crm__sleep', arguments: { ms: 1, label: 'beside-the-crash' } },
          ],
        }
      : {
          content: req.messages
            .filter((m) => m.role === 'tool')
            .map((m) => String(m.content))
            .join(' | '),
        };
  if (u === 'safe read')
    return r === 0
      ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 4000, label: 'safe-read' } }] }
      : { content: String(req.messages.at(-1)!.content) };
  if (u === 'killed every time')
    return r === 0
      ? {
          tool_calls: ['stall-a', 'stall-b'].map((label) => ({ name: 'crm__sleep', arguments: { ms: 60_000, label } })),
        }
      : {
          content: req.messages
            .filter((m) => m.role === 'tool')
            .map((m) => String(m.content))
            .join(' | '),
        };
  return { content: 'unknown' };
};

let llm: ScriptedLlm;
let crm: CrmMcpServer;
let env: Record<string, string>;
let apiUrl: string;
let redis: RedisClient;
let store: RunStore;
const services = serviceGroup(() => env);
const start = services.start;

/** The services' MCP config lives here for the file's tests. */
let dir: string | undefined;

beforeAll(async () => {
  llm = await startScriptedLlm({ handler });
  crm = await startCrmMcpServer();
  const port = await freePort();
  dir = `/tmp/agentq-crash-${randomBytes(4).toString('hex')}`;
  const { mkdirSync, writeFileSync } = await import('node:fs');
  mkdirSync(dir, { recursive: true });
  writeFileSync(`${dir}/mcp.json`, JSON.stringify({ mcpServers: { crm: { url: crm.url } } }));
  env = {
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: `crash${randomBytes(3).toString('hex')}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'test',
    MODEL: 'scripted',
    MCP_CONFIG: `${dir}/mcp.json`,
    LOG_LEVEL: 'info',
    // Short locks keep the suite quick; CRASH_JOB_LOCK_MS / CRASH_STALLED_MS measure the defaults.
    JOB_LOCK_MS: process.env.CRASH_JOB_LOCK_MS ?? '1000',
    STALLED_INTERVAL_MS: process.env.CRASH_STALLED_MS ?? '500',
    // On a Redis Cluster, three cells (a set of queues on each shard): the killed workers' jobs
    // are picked up again in every cell.
    ...(inject('redisUrl').startsWith('redis+cluster:') ? { CELLS: '3' } : {}),
  };
  apiUrl = `http://127.0.0.1:${port}`;
  // A Redis Cluster too: the cluster project runs this file again on one.
  redis = createRedis(env.REDIS_URL);
  store = new RunStore({ redis, prefix: env.QUEUE_PREFIX });
  await start('api');
}, 60_000);

afterEach(() => services.killWorkers());

afterAll(async () => {
  await services.stopAll();
  await llm?.close();
  await crm?.close();
  redis?.disconnect();
  if (dir) (await import('node:fs')).rmSync(dir, { recursive: true, force: true });
});

const post = async (input: string) => {
  const res = await fetch(`${apiUrl}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input }),
  });
  expect(res.status).toBe(202);
  return (await bodyOf<RunObject>(res)).id;
};
/** Waits (polling every 10 ms, failing after 3 s) until `seen()` holds: the moment to do damage mid-call. */
const until = (seen: () => boolean, what: string) => waitFor(seen, { what, timeoutMs: 3000 });
const get = async <P extends string>(path: P): Promise<GetBody<P>> => bodyOf(await fetch(`${apiUrl}${path}`));
const waitAll = async (ids: string[], timeoutMs = 40_000): Promise<RunObject[]> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await Promise.all(ids.map((id) => get(`/v1/runs/${id}`)));
    if (runs.every((r) => ['completed', 'failed', 'cancelled', 'incomplete'].includes(r.status))) return runs;
    if (Date.now() > deadline)
      throw new Error(
        `not finished: ${runs.filter((r) => r.status === 'running' || r.status === 'queued').length} of ${ids.length}`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
};

/**
 * Where the runs are, from their events: model steps and tool calls begun and not finished
 * (in flight), runs with a finished step that have not ended (mid-way), and runs ended.
 */
async function progress(ids: string[]): Promise<{ steps: number; tools: number; midway: number; finished: number }> {
  const out = { steps: 0, tools: 0, midway: 0, finished: 0 };
  for (const id of ids) {
    const open = new Set<string>();
    let stepsDone = 0;
    let ended = false;
    for (const e of await store.events.read(id)) {
      const d = e.data as { depth: number; index: number };
      if (e.type === 'step.started') open.add(`step ${d.depth}`);
      else if (e.type === 'step.completed') {
        open.delete(`step ${d.depth}`);
        stepsDone++;
      } else if (e.type === 'tool.started') open.add(`tool ${d.depth}.${d.index}`);
      else if (e.type === 'tool.completed') open.delete(`tool ${d.depth}.${d.index}`);
      else if (e.type.startsWith('run.') && !['run.queued', 'run.started'].includes(e.type)) ended = true;
    }
    for (const k of open) {
      if (k.startsWith('step')) out.steps++;
      else out.tools++;
    }
    if (ended) out.finished++;
    else if (stepsDone > 0) out.midway++;
  }
  return out;
}

/** Every assistant tool_calls is followed by exactly its tool messages, once, in order. */
function wellFormed(msgs: ChatMessage[]): string | null {
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role !== 'assistant' || !m.tool_calls?.length) continue;
    const ids = m.tool_calls.map((t) => t.id);
    const following = msgs
      .slice(i + 1, i + 1 + ids.length)
      .map((t) => (t.role === 'tool' ? t.tool_call_id : `<${t.role}>`));
    if (JSON.stringify(following) !== JSON.stringify(ids)) return `at ${i}: expected ${ids} got ${following}`;
  }
  return null;
}

describe('worker crashes', () => {
  it('kill -9 of the agent-worker and the tool-worker in the ' +
    'middle of many runs: every run completes, transcripts intact', async () => {
    let agent = await start('agent-worker');
    let tool = await start('tool-worker');
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => post(`many ${i}`)));
    // Tool calls of these runs that the CRM server has begun and not finished.
    const toolsInFlight = () =>
      crm.calls.filter(
        (c) => String(c.args.label).startsWith('many ') && !crm.slept.some((x) => x.label === c.args.label),
      ).length;
    // Once several runs are past their first step and tool calls are running, kill both workers
    // at once. The condition's last check, the count and the kill happen in one tick: nothing
    // that changes the CRM server's calls runs in between.
    await waitFor(async () => (await progress(ids)).midway >= 5 && toolsInFlight() > 0, {
      what: 'runs mid-way with tool calls in flight',
      timeoutMs: 15_000,
    });
    const toolsAtKill = toolsInFlight();
    await Promise.all([agent.kill('SIGKILL'), tool.kill('SIGKILL')]);
    const killedAt = Date.now();
    // Nothing has moved since the kill (no worker is left): the runs were mid-way, not done.
    const atKill = { ...(await progress(ids)), toolsAtKill };
    expect(toolsAtKill).toBeGreaterThan(0);
    expect(atKill.midway, JSON.stringify(atKill)).toBeGreaterThan(0);
    expect(atKill.finished, JSON.stringify(atKill)).toBeLessThan(ids.length);
    agent = await start('agent-worker');
    tool = await start('tool-worker');
    const runs = await waitAll(ids);
    const recovery = Date.now() - killedAt;
    for (const r of runs) expect(r, r.id).toMatchObject({ status: 'completed', depth: 3 });
    for (const r of runs) {
      const msgs = (await get(`/v1/runs/${r.id}/messages`)).data;
      expect(wellFormed(msgs), r.id).toBeNull();
      // user, then 3 × (assistant + 2 tools), then the answer: nothing duplicated or missing.
      expect(msgs.map((m) => m.role).join(',')).toBe(
        ['user', ...Array(3).fill('assistant,tool,tool'), 'assistant'].join(','),
      );
      expect(r.usage.model_calls).toBe(4);
      expect(r.usage.tool_calls).toBe(6);
    }
    console.log(
      `recovery: all 30 runs completed ${recovery} ms after the kill; in flight at the kill: ${JSON.stringify(atKill)}`,
    );
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 90_000);

  it('a non-idempotent tool interrupted mid-call is not run again: the model is told the outcome is unknown', async () => {
    const agent = await start('agent-worker');
    let tool = await start('tool-worker');
    const before = crm.calls.filter((c) => c.tool === 'non_idempotent_write').length;
    const id = await post('unsafe write');
    await until(
      () => crm.calls.filter((c) => c.tool === 'non_idempotent_write').length > before,
      'the write to be running',
    );
    await tool.kill('SIGKILL');
    tool = await start('tool-worker');
    const [run] = await waitAll([id]);
    expect(run.status).toBe('completed');
    expect(run.output?.content).toMatch(/outcome is unknown/);
    // Executed once, by the killed worker; never again.
    expect(crm.calls.filter((c) => c.tool === 'non_idempotent_write').length - before).toBe(1);
    const steps = (await get(`/v1/runs/${id}/steps`)).data;
    expect(steps[0].tool_calls[0], JSON.stringify(steps[0].tool_calls[0])).toMatchObject({
      is_error: true,
      attempts: 2,
    });
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 60_000);

  it("a round's job killed mid-call: its non-idempotent call is not run again, nor the call beside it that had finished", async () => {
    const agent = await start('agent-worker');
    let tool = await start('tool-worker');
    const writes = () => crm.calls.filter((c) => c.tool === 'non_idempotent_write' && c.args.key === 'k-round').length;
    const id = await post('unsafe write in a round');
    // The call beside the write has its result stored (not only sent by the server: a result
    // the worker had not stored yet is a call interrupted, which a read-only tool may run again).
    const besideStored = async () => Boolean((await get(`/v1/runs/${id}/steps`)).data[0]?.tool_calls?.[1]?.output);
    await waitFor(async () => writes() === 1 && (await besideStored()), {
      what: 'the write to be running and the result of the call beside it stored',
      timeoutMs: 3000,
    });
    await tool.kill('SIGKILL');
    tool = await start('tool-worker');
    const [run] = await waitAll([id]);
    expect(run.status).toBe('completed');
    expect(run.output?.content).toMatch(/outcome is unknown.* \| slept 1 ms beside-the-crash$/);
    expect(writes()).toBe(1);
    expect(crm.calls.filter((c) => c.args.label === 'beside-the-crash')).toHaveLength(1);
    const calls = (await get(`/v1/runs/${id}/steps`)).data[0].tool_calls;
    expect(calls[0], JSON.stringify(calls[0])).toMatchObject({
      is_error: true,
      outcome: 'unknown_outcome',
      attempts: 2,
    });
    expect(calls[1], JSON.stringify(calls[1])).toMatchObject({ is_error: false, attempts: 1 });
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 60_000);

  it('a read-only tool interrupted mid-call is run again', async () => {
    const agent = await start('agent-worker');
    let tool = await start('tool-worker');
    const id = await post('safe read');
    await until(() => crm.calls.some((c) => c.args.label === 'safe-read'), 'the read to be running');
    await tool.kill('SIGKILL');
    tool = await start('tool-worker');
    const [run] = await waitAll([id]);
    expect(run.output?.content).toBe('slept 4000 ms safe-read');
    const steps = (await get(`/v1/runs/${id}/steps`)).data;
    expect(
      crm.calls.filter((c) => c.args.label === 'safe-read'),
      JSON.stringify(steps),
    ).toHaveLength(2);
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 60_000);

  it("a round's job whose tool-worker is killed every time it runs it fails for good, " +
    'and the run goes on: its next step answers the calls', async () => {
    // No flow waits for a round that is one job: the job adds the next step. Killed more often
    // than BullMQ's stall limit allows (3), the job is failed on its next pickup without running,
    // and the worker that failed it adds the next step, as a flow would have released it.
    const agent = await start('agent-worker');
    let tool = await start('tool-worker'); // lists the tools before the run's first step
    const id = await post('killed every time');
    const started = () => crm.calls.filter((c) => c.args.label === 'stall-a').length;
    for (let run = 1; run <= 4; run++) {
      if (run > 1) tool = await start('tool-worker');
      await waitFor(() => started() >= run, { what: `the round's job to be running (${run})`, timeoutMs: 15_000 });
      await tool.kill('SIGKILL');
    }
    tool = await start('tool-worker');
    const [run] = await waitAll([id]);
    expect(run.status).toBe('completed');
    // Both calls answered with an error text by the step after the round, which the model saw.
    expect(run.output!.content!.split(' | ')).toHaveLength(2);
    expect(run.output?.content).toMatch(/no result was recorded.*\|.*no result was recorded/);
    // Run four times (each time killed), never a fifth.
    expect(started()).toBe(4);
    expect(crm.slept.filter((c) => c.label.startsWith('stall-'))).toEqual([]);
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 90_000);

  it('SIGTERM during a model step finishes the step and exits 0; the run completes', async () => {
    llm.setLatency(800);
    try {
      const agent = await start('agent-worker');
      const tool = await start('tool-worker');
      const id = await post('many sigterm');
      await until(() => llm.requests.some((r) => firstUser(r) === 'many sigterm'), 'the model request to be under way');
      const exit = await agent.kill('SIGTERM');
      expect(exit.code).toBe(0);
      // The step in flight was finished (its assistant message and its tool calls are stored)
      // before the exit, and no step was begun after the signal.
      const steps = (await get(`/v1/runs/${id}/steps`)).data;
      expect(steps, agent.output.join('\n')).toHaveLength(1);
      expect(steps[0]).toMatchObject({ depth: 0, status: 'completed' });
      expect(steps[0].tool_calls).toHaveLength(2);
      const next = await start('agent-worker');
      const [run] = await waitAll([id]);
      expect(run.status).toBe('completed');
      expect(run.usage.model_calls).toBe(4);
      await next.kill('SIGTERM');
      await tool.kill('SIGTERM');
    } finally {
      llm.setLatency(0);
    }
  }, 60_000);
});

import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { startScriptedLlm, type ChatRequest, type Handler, type ScriptedLlm } from '@agentq/scripted-llm';
import { startCrmMcpServer, type CrmMcpServer } from '../fixtures/crm-mcp-server.js';
import { freePort } from '../fixtures/redis.js';
import { startService, waitForOutput, type ServiceName, type ServiceProcess } from '../fixtures/processes.js';

// Real processes, killed with SIGKILL in the middle of their work.
const round = (req: ChatRequest) => req.messages.filter((m: any) => m.role === 'assistant').length;
const firstUser = (req: ChatRequest) => req.messages.find((m: any) => m.role === 'user')?.content as string;

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
  if (u === 'unsafe write') return r === 0 ? { tool_calls: [{ name: 'crm__non_idempotent_write', arguments: { key: 'k1', ms: 4000 } }] } : { content: String(req.messages.at(-1).content) };
  if (u === 'safe read') return r === 0 ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 4000, label: 'safe-read' } }] } : { content: String(req.messages.at(-1).content) };
  return { content: 'unknown' };
};

let llm: ScriptedLlm;
let crm: CrmMcpServer;
let env: Record<string, string>;
let api: ServiceProcess;
let apiUrl: string;
const procs: ServiceProcess[] = [];
const start = async (name: ServiceName) => {
  const p = startService(name, env);
  procs.push(p);
  await waitForOutput(p, name === 'api' ? /api listening/ : /worker started/);
  return p;
};

beforeAll(async () => {
  llm = await startScriptedLlm({ handler });
  crm = await startCrmMcpServer();
  const port = await freePort();
  const dir = `/tmp/agentq-crash-${randomBytes(4).toString('hex')}`;
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
  };
  apiUrl = `http://127.0.0.1:${port}`;
  api = await start('api');
}, 60_000);

// Workers of a test never outlive it, even when it fails half-way.
afterEach(async () => {
  await Promise.all(procs.filter((p) => p.name !== 'api').map((p) => p.kill('SIGKILL')));
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill()));
  await llm?.close();
  await crm?.close();
});

const post = async (input: string) => {
  const res = await fetch(`${apiUrl}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ input }) });
  expect(res.status).toBe(202);
  return (await res.json()).id as string;
};
/** Polls (10 ms, up to 3 s) until `seen()` holds: the moment to do damage mid-call. */
const until = async (seen: () => boolean) => {
  for (let i = 0; i < 300 && !seen(); i++) await new Promise((r) => setTimeout(r, 10));
};
const get = async (path: string): Promise<any> => (await fetch(`${apiUrl}${path}`)).json();
const waitAll = async (ids: string[], timeoutMs = 40_000): Promise<any[]> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await Promise.all(ids.map((id) => get(`/v1/runs/${id}`)));
    if (runs.every((r) => ['completed', 'failed', 'cancelled', 'incomplete'].includes(r.status))) return runs;
    if (Date.now() > deadline) throw new Error(`not finished: ${runs.filter((r) => r.status === 'running' || r.status === 'queued').length} of ${ids.length}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

/** Every assistant tool_calls is followed by exactly its tool messages, once, in order. */
function wellFormed(msgs: any[]): string | null {
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role !== 'assistant' || !m.tool_calls?.length) continue;
    const ids = m.tool_calls.map((t: any) => t.id);
    const following = msgs.slice(i + 1, i + 1 + ids.length).map((t: any) => (t.role === 'tool' ? t.tool_call_id : `<${t.role}>`));
    if (JSON.stringify(following) !== JSON.stringify(ids)) return `at ${i}: expected ${ids} got ${following}`;
  }
  return null;
}

describe('worker crashes', () => {
  it('kill -9 of the agent-worker and the tool-worker in the middle of many runs: every run completes, transcripts intact', async () => {
    let agent = await start('agent-worker');
    let tool = await start('tool-worker');
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => post(`many ${i}`)));
    // Let work get under way, then kill both workers mid-flight.
    await new Promise((r) => setTimeout(r, 400));
    await agent.kill('SIGKILL');
    await tool.kill('SIGKILL');
    const killedAt = Date.now();
    agent = await start('agent-worker');
    tool = await start('tool-worker');
    const runs = await waitAll(ids);
    const recovery = Date.now() - killedAt;
    for (const r of runs) expect(r, r.id).toMatchObject({ status: 'completed', depth: 3 });
    for (const r of runs) {
      const msgs = (await get(`/v1/runs/${r.id}/messages`)).data;
      expect(wellFormed(msgs), r.id).toBeNull();
      // user, then 3 × (assistant + 2 tools), then the answer: nothing duplicated or missing.
      expect(msgs.map((m: any) => m.role).join(',')).toBe(['user', ...Array(3).fill('assistant,tool,tool'), 'assistant'].join(','));
      expect(r.usage.model_calls).toBe(4);
      expect(r.usage.tool_calls).toBe(6);
    }
    console.log(`recovery: all 30 runs completed ${recovery} ms after the kill`);
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 90_000);

  it('a non-idempotent tool interrupted mid-call is not run again: the model is told the outcome is unknown', async () => {
    const agent = await start('agent-worker');
    let tool = await start('tool-worker');
    const before = crm.calls.filter((c) => c.tool === 'non_idempotent_write').length;
    const id = await post('unsafe write');
    await until(() => crm.calls.filter((c) => c.tool === 'non_idempotent_write').length > before);
    await tool.kill('SIGKILL');
    tool = await start('tool-worker');
    const [run] = await waitAll([id]);
    expect(run.status).toBe('completed');
    expect(run.output.content).toMatch(/outcome is unknown/);
    // Executed once, by the killed worker; never again.
    expect(crm.calls.filter((c) => c.tool === 'non_idempotent_write').length - before).toBe(1);
    const steps = (await get(`/v1/runs/${id}/steps`)).data;
    expect(steps[0].tool_calls[0], JSON.stringify(steps[0].tool_calls[0])).toMatchObject({ is_error: true, attempts: 2 });
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 60_000);

  it('a read-only tool interrupted mid-call is run again', async () => {
    const agent = await start('agent-worker');
    let tool = await start('tool-worker');
    const id = await post('safe read');
    await until(() => crm.calls.some((c) => c.args.label === 'safe-read'));
    await tool.kill('SIGKILL');
    tool = await start('tool-worker');
    const [run] = await waitAll([id]);
    expect(run.output.content).toBe('slept 4000 ms safe-read');
    const steps = (await get(`/v1/runs/${id}/steps`)).data;
    expect(crm.calls.filter((c) => c.args.label === 'safe-read'), JSON.stringify(steps)).toHaveLength(2);
    await agent.kill('SIGTERM');
    await tool.kill('SIGTERM');
  }, 60_000);

  it('SIGTERM during a model step finishes the step and exits 0; the run completes', async () => {
    llm.setLatency(800);
    try {
      const agent = await start('agent-worker');
      const tool = await start('tool-worker');
      const id = await post('many sigterm');
      await until(() => llm.requests.some((r) => firstUser(r) === 'many sigterm'));
      const exit = await agent.kill('SIGTERM');
      expect(exit.code).toBe(0);
      // The step in flight was finished (its assistant message is stored) before the exit.
      const steps = (await get(`/v1/runs/${id}/steps`)).data;
      expect(steps.length, agent.output.join('\n')).toBeGreaterThanOrEqual(1);
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

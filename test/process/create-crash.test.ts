import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { createLogger } from '@agentq/shared/infra';
import { RunStore } from '@agentq/shared/store';
import { cellPrefix, jobId } from '@agentq/shared/jobs';
import { startAgentWorker, loadAgentWorkerConfig, type AgentWorkerHandle } from '@agentq/agent-worker';
import { startToolWorker, loadToolWorkerConfig, type ToolWorkerHandle } from '@agentq/tool-worker';
import { startScriptedLlm, type ScriptedLlm } from '@agentq/scripted-llm';
import { startService, waitForOutput, type ServiceProcess } from '../fixtures/processes.js';
import { freePort } from '../fixtures/redis.js';
import { waitFor } from '../fixtures/wait.js';

// An API process killed (SIGKILL) between writing a run and enqueueing its first step: the
// 202 never left, but the run is in Redis. It must still run, found by the next API process's
// sweep, or by the client's retry with the same Idempotency-Key.

let llm: ScriptedLlm;
let agent: AgentWorkerHandle;
let tool: ToolWorkerHandle;
let redis: Redis;
let store: RunStore;
const prefix = `cc${randomBytes(4).toString('hex')}`;
const apis: ServiceProcess[] = [];
const env = () => ({
  REDIS_URL: inject('redisUrl'),
  QUEUE_PREFIX: prefix,
  MODEL: 'scripted',
  LOG_LEVEL: 'info',
  HOST: '127.0.0.1',
});

beforeAll(async () => {
  llm = await startScriptedLlm({ handler: (req) => ({ content: `answered: ${req.messages.at(-1)?.content}` }) });
  const workerEnv = { ...env(), OPENAI_BASE_URL: llm.baseURL, OPENAI_API_KEY: 'k', LOG_LEVEL: 'silent' };
  const logger = createLogger({ service: 'test', level: 'silent' });
  tool = await startToolWorker(loadToolWorkerConfig(workerEnv), logger, { mcpConfig: { mcpServers: {} } });
  agent = await startAgentWorker(loadAgentWorkerConfig(workerEnv), logger);
  redis = new Redis(inject('redisUrl'));
  store = new RunStore({ redis, prefix });
});

afterEach(async () => {
  for (const api of apis.splice(0)) await api.kill('SIGTERM');
});

afterAll(async () => {
  await agent?.close();
  await tool?.close();
  await llm?.close();
  redis?.disconnect();
});

async function startApi(extra: Record<string, string>): Promise<string> {
  const port = await freePort();
  const api = startService('api', { ...env(), PORT: String(port), ...extra });
  apis.push(api);
  await waitForOutput(api, /api listening/);
  return `http://127.0.0.1:${port}`;
}

/** POSTs a run to an API that dies half-way; returns the id of the run it wrote. */
async function postToDyingApi(input: string, headers: Record<string, string> = {}): Promise<string> {
  const url = await startApi({ AGENTQ_FAILPOINT: 'run_written' });
  const api = apis.at(-1)!;
  const res = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ input }),
  }).catch((err: Error) => err);
  expect(res, 'the client got no answer').toBeInstanceOf(Error);
  expect((await api.exited).signal).toBe('SIGKILL');
  // Half made: the run is written and queued, its first step is not enqueued.
  const [id] = await store.runs.pending(Date.now() + 1);
  expect(id).toMatch(/^run_/);
  expect((await store.runs.get(id))?.status).toBe('queued');
  expect(await redis.exists(`${cellPrefix(prefix, 0)}:agent:${jobId('agentStep', { runId: id, depth: 0 })}`)).toBe(0);
  return id;
}

async function waitForStatus(url: string, id: string, status: string, ms = 15_000) {
  return waitFor(
    async () => {
      const run = (await (await fetch(`${url}/v1/runs/${id}`)).json()) as {
        status: string;
        output?: { content: string };
      };
      return run.status === status ? run : undefined;
    },
    { what: `run ${id} to be ${status}`, timeoutMs: ms, intervalMs: 50 },
  );
}

describe('an API killed between writing a run and enqueueing it', () => {
  it('leaves the run to the next API process, which enqueues it: it runs to completion', async () => {
    const id = await postToDyingApi('swept up');
    const url = await startApi({ PENDING_SWEEP_INTERVAL_MS: '200' });
    const run = await waitForStatus(url, id, 'completed');
    expect(run.output?.content).toBe('answered: swept up');
    expect(await store.runs.pending(Date.now() + 1)).toEqual([]);
  });

  it('answers a retry with the same Idempotency-Key with that run, which then runs (no second run)', async () => {
    const headers = { 'idempotency-key': `retry-${randomBytes(4).toString('hex')}` };
    const id = await postToDyingApi('retried', headers);
    // No sweep takes a run this young: only the retry can get it going here.
    const url = await startApi({ PENDING_SWEEP_GRACE_MS: '3600000' });
    expect(await store.runs.pending(Date.now() + 1)).toEqual([id]);
    const res = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ input: 'retried' }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: string }).id).toBe(id);
    expect((await waitForStatus(url, id, 'completed')).output?.content).toBe('answered: retried');
    const list = (await (await fetch(`${url}/v1/runs?limit=100`)).json()) as {
      data: Array<{ id: string; status: string }>;
    };
    expect(list.data.filter((r) => r.status !== 'completed')).toEqual([]);
  });
});

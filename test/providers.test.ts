import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedLlm, type ChatRequest, type Reply, type ScriptedLlm } from '@agentq/scripted-llm';
import { round, toolMsgs } from './fixtures/scenarios.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// Two scripted models as two providers, `a` and `b` (and `c`, `d`: b's server again, with limits).
const systemOf = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'system')?.content ?? '');
const userOf = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'user')?.content ?? '');
/** What happened, in order, across both servers. */
const log: string[] = [];
let storming = true;
let inFlightD = 0;
let maxInFlightD = 0;

// Priced on `b`: $2 per million prompt tokens, $10 per million completion tokens.
const PRICE = { input_per_mtok: 2, output_per_mtok: 10 };
const big = { prompt_tokens: 1000, completion_tokens: 100 }; // $0.003
const small = { prompt_tokens: 500, completion_tokens: 50 }; // $0.0015
const query = (prompt: string): Reply => ({ tool_calls: [{ name: 'agent_query', arguments: { prompt } }], usage: big });

function priced(req: ChatRequest): Reply {
  const user = userOf(req);
  if (user === 'COST parent') return round(req) === 0 ? query('COST child') : { content: 'done', usage: big };
  if (user === 'COST child') return { content: 'child done', usage: small };
  if (user === 'BUDGET parent') return round(req) === 0 ? query('BUDGET child') : { content: 'done', usage: big };
  // The child never stops calling tools: only the budget ends it.
  return { tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'x' } }], usage: big };
}

function answer(server: string, req: ChatRequest): Reply {
  if (userOf(req) === 'PARENT typed')
    return round(req) === 0
      ? {
          tool_calls: [
            {
              name: 'agent_query_batch',
              arguments: {
                prompts: [
                  { prompt: 'analyse', agent: 'analyst' },
                  { prompt: 'summarise', agent: 'summarizer' },
                ],
              },
            },
          ],
        }
      : { content: String(toolMsgs(req)[0]?.content) };
  return { content: `${server}:${req.model}:${systemOf(req)}` };
}

async function handleA(req: ChatRequest): Promise<Reply> {
  if (req.model === 'storm' && storming) {
    log.push('a:429');
    return { error: { status: 429, message: 'slow down', headers: { 'retry-after-ms': '50' } } };
  }
  if (req.model === 'broken') return { error: { status: 503, message: 'down' } };
  log.push(`a:${req.model}`);
  return answer('a', req);
}
async function handleB(req: ChatRequest): Promise<Reply> {
  log.push(`b:${req.model}`);
  if (req.model === 'priced') return priced(req);
  if (req.model === 'one-at-a-time') {
    maxInFlightD = Math.max(maxInFlightD, ++inFlightD);
    await new Promise((r) => setTimeout(r, 30));
    inFlightD--;
  }
  return answer('b', req);
}

let a: ScriptedLlm;
let b: ScriptedLlm;
let stack: Stack;
let dir: string;
beforeAll(async () => {
  a = await startScriptedLlm({ handler: handleA });
  b = await startScriptedLlm({ handler: handleB });
  dir = mkdtempSync(join(tmpdir(), 'agentq-providers-'));
  const config = join(dir, 'providers.json');
  writeFileSync(
    config,
    JSON.stringify({
      default: 'a',
      providers: {
        a: { base_url: a.baseURL, api_key_env: 'KEY_A' },
        b: { base_url: b.baseURL, api_key_env: 'KEY_B', headers: { 'x-team': 'blue' }, models: { priced: PRICE } },
        c: { base_url: b.baseURL, rate_limit: '1/200' },
        d: { base_url: b.baseURL, concurrency: 1 },
      },
    }),
  );
  stack = await startStack({
    handler: () => ({ content: 'the default OPENAI_BASE_URL is not used with PROVIDERS_CONFIG' }),
    env: {
      PROVIDERS_CONFIG: config,
      KEY_A: 'key-of-a',
      KEY_B: 'key-of-b',
      MODEL: 'a/default-model',
      // Two steps at once in all: a step of `a` that held a slot while it waited would stop `b`.
      AGENT_CONCURRENCY: '2',
      MODEL_BACKOFF_BASE_MS: '1',
      METRICS_PORT: '0',
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await a?.close();
  await b?.close();
  rmSync(dir, { recursive: true, force: true });
});

const run = async (body: Record<string, unknown>) => stack.waitForRun((await stack.createRun(body)).id);
const waits = async (provider: string, reason: string) => {
  const text = await (await fetch(`${stack.agent.metricsUrl}/metrics`)).text();
  const line = text
    .split('\n')
    .find(
      (l) =>
        l.startsWith('agentq_provider_waits_total{') &&
        l.includes(`provider="${provider}"`) &&
        l.includes(`reason="${reason}"`),
    );
  return line ? Number(line.split(' ').at(-1)) : 0;
};

describe('model providers', () => {
  it('route "<provider>/<model>" to the provider, with its key and headers; any other model to the default', async () => {
    expect((await run({ input: 'hi', model: 'b/m-b' })).output?.content).toBe('b:m-b:');
    const i = b.requests.findIndex((r) => r.model === 'm-b');
    expect(b.requestHeaders[i]).toMatchObject({ authorization: 'Bearer key-of-b', 'x-team': 'blue' });
    expect((await run({ input: 'hi' })).output?.content).toBe('a:default-model:');
    expect(a.requestHeaders[a.requests.findIndex((r) => r.model === 'default-model')]).toMatchObject({
      authorization: 'Bearer key-of-a',
    });
    expect((await run({ input: 'hi', model: 'meta-llama/Llama-3' })).output?.content).toBe('a:meta-llama/Llama-3:');
  });

  it('let a parent call two typed children on two providers, each with its own instructions and model', async () => {
    for (const [name, def] of [
      ['analyst', { instructions: 'You analyse.', model: 'a/m-analyst' }],
      ['summarizer', { instructions: 'You summarise.', model: 'b/m-summarizer' }],
    ] as const)
      expect((await stack.request(`/v1/agents/${name}`, { method: 'PUT', json: def })).status).toBe(201);
    const done = await run({ input: 'PARENT typed', subagents: { enabled: true, agents: ['analyst', 'summarizer'] } });
    expect(JSON.parse(done.output!.content as string)).toEqual([
      'a:m-analyst:You analyse.',
      'b:m-summarizer:You summarise.',
    ]);
    expect(a.requests.filter((r) => r.model === 'm-analyst').map(systemOf)).toEqual(['You analyse.']);
    expect(b.requests.filter((r) => r.model === 'm-summarizer').map(systemOf)).toEqual(['You summarise.']);
  });

  it("a 429 storm on one provider delays no step of another's", async () => {
    const stormy = await Promise.all(
      Array.from({ length: 6 }, (_, i) => stack.createRun({ input: `storm ${i}`, model: 'a/storm' })),
    );
    await waitFor(() => log.filter((e) => e === 'a:429').length >= 6, { what: 'the storm to be on' });
    const calm = await Promise.all(
      Array.from({ length: 6 }, (_, i) => stack.createRun({ input: `calm ${i}`, model: 'b/calm' })),
    );
    for (const r of calm) expect((await stack.waitForRun(r.id)).status).toBe('completed');
    // In the order of events: every step of b was answered, once, while a still answered 429 (a 429
    // came after b's last answer), and none of a's runs had an answer.
    const lastCalm = log.lastIndexOf('b:calm');
    expect(log.filter((e) => e === 'b:calm')).toHaveLength(6);
    await waitFor(() => log.lastIndexOf('a:429') > lastCalm, { what: 'a 429 after the last step of b' });
    expect(log).not.toContain('a:storm');
    for (const r of stormy) expect((await stack.getJson(`/v1/runs/${r.id}`)).status).toBe('running');
    expect(await waits('b', 'rate_limited')).toBe(0);
    expect(await waits('b', 'cooldown')).toBe(0);
    expect(await waits('a', 'cooldown')).toBeGreaterThan(0);
    storming = false;
    for (const r of stormy) expect((await stack.waitForRun(r.id)).status).toBe('completed');
  });

  it("keep a provider's rate limit (every worker's calls) and concurrency (each worker's) by parking its steps", async () => {
    const limited = await Promise.all(Array.from({ length: 3 }, () => run({ input: 'x', model: 'c/limited' })));
    expect(limited.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    expect(await waits('c', 'rate_limit')).toBeGreaterThan(0);
    const serial = await Promise.all(Array.from({ length: 3 }, () => run({ input: 'x', model: 'd/one-at-a-time' })));
    expect(serial.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    expect(maxInFlightD).toBe(1);
    expect(await waits('d', 'concurrency')).toBeGreaterThan(0);
  });

  it('fall back to the next model once a step has spent its tries; /steps says which model answered', async () => {
    const done = await run({ input: 'x', model: 'a/broken', fallback_models: ['b/rescue'] });
    expect(done).toMatchObject({ status: 'completed', output: { content: 'b:rescue:' } });
    expect(a.requests.filter((r) => r.model === 'broken')).toHaveLength(8);
    const steps = (await stack.getJson(`/v1/runs/${done.id}/steps`)).data;
    expect(steps.map((s) => s.model)).toEqual(['b/rescue']);
    // Without a fallback left, the run fails as before.
    const failed = await run({ input: 'x', model: 'a/broken', fallback_models: ['a/broken'] });
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'model_unavailable' } });
  });

  it('cost each priced step, and sum it per run, per tree and per key and day; spend per model is a metric', async () => {
    const before = (await stack.getJson('/v1/usage')).cost_usd_today;
    const done = await run({ input: 'COST parent', model: 'b/priced', subagents: { enabled: true } });
    expect(done.status).toBe('completed');
    const steps = (await stack.getJson(`/v1/runs/${done.id}/steps`)).data;
    expect(steps.map((s) => s.usage)).toEqual([
      { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, cost_usd: 0.003 },
      { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, cost_usd: 0.003 },
    ]);
    expect(done.usage.cost_usd).toBe(0.006);
    expect(done.usage_total.cost_usd).toBe(0.0075);
    const [child] = (await stack.getJson(`/v1/runs/${done.id}/children`)).data;
    expect(child!.usage.cost_usd).toBe(0.0015);
    // A run of an unpriced model has no cost, not a cost of 0.
    expect((await run({ input: 'x', model: 'b/free' })).usage).not.toHaveProperty('cost_usd');
    // The key's day: counted by every agent-worker within a second.
    await waitFor(async () => (await stack.getJson('/v1/usage')).cost_usd_today >= before + 0.0075 - 1e-9, {
      what: "the spend in the key's day",
    });
    const text = await (await fetch(`${stack.agent.metricsUrl}/metrics`)).text();
    expect(text).toMatch(/^agentq_model_cost_usd_total\{model="b\/priced"[^}]*\} 0\.007/m);
  });

  it('end a tree at max_cost_usd the graceful way, every run of it at its next step', async () => {
    const ended = await run({
      input: 'BUDGET parent',
      model: 'b/priced',
      subagents: { enabled: true },
      max_cost_usd: 0.008,
      on_budget_exhausted: 'stop',
    });
    expect(ended).toMatchObject({ status: 'incomplete', stop_reason: 'max_cost_usd' });
    const [child] = (await stack.getJson(`/v1/runs/${ended.id}/children`)).data;
    // The parent's step ($0.003), then the child's two ($0.006): the next step of each stops.
    expect(child).toMatchObject({ status: 'incomplete', stop_reason: 'max_cost_usd', usage: { cost_usd: 0.006 } });
    expect(ended.usage_total.cost_usd).toBe(0.009);
  });
});

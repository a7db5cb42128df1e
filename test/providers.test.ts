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
        b: { base_url: b.baseURL, api_key_env: 'KEY_B', headers: { 'x-team': 'blue' } },
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
});

import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunObject } from '@agentq/shared/core';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// A service many keys share: each tenant's runs wait in its own line, so a key that floods waits
// behind itself; per-tenant limits answer 429 before anything piles up without end.

const KEYS = {
  flood: 'flood-key-0001',
  calm: 'calm-key-00001',
  chatty: 'chatty-key-001',
  tree: 'tree-key-00001',
  hungry: 'hungry-key-001',
  daily: 'daily-key-0001',
  heavy: 'heavy-key-0001',
  light: 'light-key-0001',
};
const sha = (k: string) => createHash('sha256').update(k).digest('hex');
const firstUser = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'user')?.content ?? '');
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const handler: Handler = (req) => {
  const u = firstUser(req);
  if (u === 'BIG TREE')
    return round(req) === 0
      ? { tool_calls: [{ name: 'agent_query_batch', arguments: { prompts: ['a', 'b', 'c', 'd', 'e'] } }] }
      : { content: String(req.messages.at(-1)?.content) };
  if (u.startsWith('hungry')) return { content: 'ate', usage: { prompt_tokens: 40, completion_tokens: 10 } };
  // A loop that would go on to max_depth, 30 tokens a step.
  if (u === 'DAILY LOOP') {
    const usage = { prompt_tokens: 25, completion_tokens: 5 };
    if (req.tool_choice === 'none') return { content: 'out of tokens for today', usage };
    return { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 1, label: 'daily' } }], usage };
  }
  return { content: `done ${u}`, delayMs: 60 };
};

const dir = mkdtempSync(join(tmpdir(), 'agentq-tenants-'));
let stack: Stack;
beforeAll(async () => {
  const config = {
    default: { max_active_runs: 50 },
    keys: {
      flood: { key_sha256: sha(KEYS.flood), max_active_runs: 3, max_queued_runs: 150 },
      calm: { key_sha256: sha(KEYS.calm) },
      chatty: { key_sha256: sha(KEYS.chatty), requests_per_minute: 5 },
      tree: { key_sha256: sha(KEYS.tree), max_runs_per_tree: 3 },
      hungry: { key_sha256: sha(KEYS.hungry), max_tokens_per_day: 60 },
      daily: { key_sha256: sha(KEYS.daily), max_tokens_per_day: 100 },
      heavy: { key_sha256: sha(KEYS.heavy), weight: 3 },
      light: { key_sha256: sha(KEYS.light), weight: 1 },
    },
  };
  writeFileSync(join(dir, 'tenants.json'), JSON.stringify(config));
  stack = await startStack({
    handler,
    env: {
      API_KEYS: Object.values(KEYS).join(','),
      TENANTS_CONFIG: join(dir, 'tenants.json'),
      AGENT_CONCURRENCY: '20',
    },
  });
});
afterAll(async () => {
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = (key: string, body: Record<string, unknown>) =>
  stack.request('/v1/runs', { method: 'POST', json: body, key });
const getRun = async (key: string, id: string) => (await stack.getJson(`/v1/runs/${id}`, key)) as RunObject;
const maxOverlap = (runs: RunObject[]) => {
  const edges = runs
    .flatMap((r) => [
      [Date.parse(r.started_at!), 1],
      [Date.parse(r.completed_at!), -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) {
    now += d;
    most = Math.max(most, now);
  }
  return most;
};

describe('a key that floods', () => {
  it("queues in its own line: another tenant's run starts at once, " +
    'the flood runs max_active_runs at a time, and past max_queued_runs it gets 429', async () => {
    const floods: string[] = [];
    let refused = 0;
    let retryAfter: string | null = null;
    for (let batch = 0; batch < 4; batch++) {
      const res = await Promise.all(
        Array.from({ length: 50 }, (_, i) => post(KEYS.flood, { input: `flood ${batch}.${i}` })),
      );
      for (const r of res) {
        if (r.status === 202) floods.push(((await r.json()) as RunObject).id);
        else {
          expect(r.status).toBe(429);
          expect(((await r.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
          retryAfter = r.headers.get('retry-after');
          refused++;
        }
      }
    }
    // 200 asked for: some were refused once 150 waited in line.
    expect(refused).toBeGreaterThan(0);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    const usage = await stack.getJson('/v1/usage', KEYS.flood);
    expect(usage.active_runs).toBeLessThanOrEqual(3);
    expect(usage.queued_runs).toBeGreaterThan(100);
    expect(usage.limits).toMatchObject({ max_active_runs: 3, max_queued_runs: 150, weight: 1 });

    const calmPost = await post(KEYS.calm, { input: 'calm' });
    expect(calmPost.status).toBe(202);
    const calm = await stack.waitForRun(((await calmPost.json()) as RunObject).id, { key: KEYS.calm });
    expect(calm.status).toBe('completed');
    // While the calm run waited to start, the flood started at most its own few runs.
    const flood = await Promise.all(floods.map((id) => getRun(KEYS.flood, id)));
    const startedMeanwhile = flood.filter(
      (r) => r.started_at && r.started_at > calm.created_at && r.started_at < calm.started_at!,
    );
    expect(startedMeanwhile.length).toBeLessThanOrEqual(4);
    console.info(
      `calm key's run started ${Date.parse(calm.started_at!) - Date.parse(calm.created_at)} ms after its POST, ` +
        `behind ${flood.length} flood runs (${usage.queued_runs} in line)`,
    );
    // Most of the flood is still waiting in its line, and it never ran more than 3 at once.
    expect(flood.filter((r) => r.status === 'queued').length).toBeGreaterThan(100);
    expect(maxOverlap(flood.filter((r) => r.status === 'completed'))).toBeLessThanOrEqual(3);
  }, 60_000);
});

describe('per-tenant limits', () => {
  it('requests_per_minute: the request past it gets 429 with Retry-After; other keys are not counted with it', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await stack.request('/v1/runs?limit=1', { key: KEYS.chatty })).status);
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(statuses.slice(5)).toEqual([429, 429]);
    const res = await stack.request('/v1/runs?limit=1', { key: KEYS.chatty });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await stack.request('/v1/runs?limit=1', { key: KEYS.calm })).status).toBe(200);
  });

  it('max_runs_per_tree: the agent_query call that would pass it is an error result; the run goes on', async () => {
    const res = await post(KEYS.tree, { input: 'BIG TREE', subagents: { enabled: true } });
    const run = await stack.waitForRun(((await res.json()) as RunObject).id, { key: KEYS.tree });
    expect(run.status).toBe('completed');
    expect(run.output?.content).toMatch(/^Error executing agent_query_batch: .*max_runs_per_tree/);
    expect((await stack.getJson(`/v1/runs/${run.id}/children`, KEYS.tree)).data).toEqual([]);
  });

  it("max_tokens_per_day: once the day's tokens are used, a new run gets 429 until midnight UTC", async () => {
    const first = await post(KEYS.hungry, { input: 'hungry 1' });
    expect(
      (await stack.waitForRun(((await first.json()) as RunObject).id, { key: KEYS.hungry })).usage.total_tokens,
    ).toBe(50);
    const second = await post(KEYS.hungry, { input: 'hungry 2' });
    expect(second.status).toBe(202);
    await stack.waitForRun(((await second.json()) as RunObject).id, { key: KEYS.hungry });
    // 100 tokens used of 60 (agent-workers write their tally every second).
    await waitFor(async () => (await stack.getJson('/v1/usage', KEYS.hungry)).tokens_today === 100, {
      what: "the tenant's 100 tokens of today",
      timeoutMs: 5_000,
    });
    const third = await post(KEYS.hungry, { input: 'hungry 3' });
    expect(third.status).toBe(429);
    const untilMidnight = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`) + 86_400_000 - Date.now();
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(untilMidnight / 1000 - 60);
  });
});

describe('max_tokens_per_day before every step', () => {
  it("ends a run that is past its tenant's day at its next step boundary, as a token budget does", async () => {
    const res = await post(KEYS.daily, { input: 'DAILY LOOP', max_depth: 20 });
    expect(res.status).toBe(202);
    const run = await stack.waitForRun(((await res.json()) as RunObject).id, { key: KEYS.daily });
    // The budget's graceful end: one last call with tools disabled, its answer the run's.
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'max_tokens_per_day' });
    expect(run.output?.content).toBe('out of tokens for today');
    // It stopped once the day's 100 tokens were used (4 steps of 30), well before max_depth.
    expect(run.usage.model_calls).toBeGreaterThanOrEqual(5);
    expect(run.usage.model_calls).toBeLessThan(20);
    expect(run.depth).toBe(run.usage.model_calls - 1);
  });
});

describe('free capacity shared by weight', () => {
  let shared: Stack;
  const sharedDir = mkdtempSync(join(tmpdir(), 'agentq-tenants-'));
  beforeAll(async () => {
    const config = {
      total_active_runs: 2,
      keys: { heavy: { key_sha256: sha(KEYS.heavy), weight: 3 }, light: { key_sha256: sha(KEYS.light), weight: 1 } },
    };
    writeFileSync(join(sharedDir, 'tenants.json'), JSON.stringify(config));
    shared = await startStack({
      handler,
      env: {
        API_KEYS: `${KEYS.heavy},${KEYS.light}`,
        TENANTS_CONFIG: join(sharedDir, 'tenants.json'),
        AGENT_CONCURRENCY: '20',
      },
    });
  });
  afterAll(async () => {
    await shared?.close();
    rmSync(sharedDir, { recursive: true, force: true });
  });

  it('when both keys wait, the one of weight 3 gets about three runs ' +
    'started for every one of the weight-1 key, and neither starves', async () => {
    const ask = async (key: string, n: number) => {
      const res = await shared.request('/v1/runs', { method: 'POST', json: { input: `${key} ${n}` }, key });
      expect(res.status).toBe(202);
      return ((await res.json()) as RunObject).id;
    };
    const ids = await Promise.all(
      Array.from({ length: 24 }, (_, i) => [ask(KEYS.heavy, i), ask(KEYS.light, i)]).flat(),
    );
    const runs = await Promise.all(
      ids.map(async (id, i) => ({
        key: i % 2 === 0 ? 'heavy' : 'light',
        run: await shared.waitForRun(id, { key: i % 2 === 0 ? KEYS.heavy : KEYS.light, timeoutMs: 30_000 }),
      })),
    );
    expect(runs.every((r) => r.run.status === 'completed')).toBe(true);
    expect(maxOverlap(runs.map((r) => r.run))).toBeLessThanOrEqual(2);
    // While both had runs waiting (the first 24 starts, after the first few), the shares follow the weights.
    const order = runs.sort((a, b) => a.run.started_at!.localeCompare(b.run.started_at!)).map((r) => r.key);
    const window = order.slice(4, 24);
    const heavy = window.filter((k) => k === 'heavy').length;
    expect(heavy).toBeGreaterThanOrEqual(13);
    expect(window.length - heavy).toBeGreaterThanOrEqual(3);
  }, 60_000);
});

import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunObject } from '@agentq/shared/core';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// Every run of a tree, root or sub-run at any depth, starts from its tenant's line and counts in
// its tenant's max_active_runs; a run that waits on its sub-runs gives its slot up meanwhile. So a
// tenant's wide tree queues behind itself, never in front of another tenant, and a tree deeper and
// wider than its tenant's limit still completes.

const KEYS = { flood: 'flood-key-0001', calm: 'calm-key-00001', narrow: 'narrow-key-001' };
const sha = (k: string) => createHash('sha256').update(k).digest('hex');
const firstUser = (req: ChatRequest) =>
  String(req.messages.find((m: { role: string }) => m.role === 'user')?.content ?? '');
const round = (req: ChatRequest) => req.messages.filter((m: { role: string }) => m.role === 'assistant').length;
const LEAVES = 30;
const FLOOD_LIMIT = 3;

/** What the scripted model saw, in order: each flood request's start and end, and the calm run's request. */
const seen: string[] = [];
let floodInFlight = 0;
let floodMostInFlight = 0;

const handler: Handler = async (req) => {
  const u = firstUser(req);
  if (u === 'WIDE TREE') {
    if (round(req) > 0) return { content: 'tree done' };
    const prompts = Array.from({ length: LEAVES }, (_, i) => `flood leaf ${i}`);
    return { tool_calls: [{ name: 'agent_query_batch', arguments: { prompts } }] };
  }
  if (u.startsWith('flood leaf')) {
    floodInFlight++;
    floodMostInFlight = Math.max(floodMostInFlight, floodInFlight);
    seen.push('leaf start');
    // The model's own latency: each leaf's step takes a while, as a real one would.
    await new Promise((r) => setTimeout(r, 80));
    floodInFlight--;
    return { content: `answered ${u}` };
  }
  if (u === 'CALM') {
    seen.push('calm');
    return { content: 'calm done' };
  }
  // The narrow tenant's tree: a root, two runs below it, two below each of them.
  if (u === 'DEEP' || u.startsWith('mid')) {
    if (round(req) > 0) return { content: `${u}: ${String(req.messages.at(-1)?.content)}` };
    const prompts = u === 'DEEP' ? ['mid a', 'mid b'] : [`leaf ${u} 1`, `leaf ${u} 2`];
    return { tool_calls: [{ name: 'agent_query_batch', arguments: { prompts } }] };
  }
  return { content: `done ${u}` };
};

const dir = mkdtempSync(join(tmpdir(), 'agentq-tree-fairness-'));
let stack: Stack;
beforeAll(async () => {
  const config = {
    default: { max_active_runs: 50 },
    keys: {
      flood: { key_sha256: sha(KEYS.flood), max_active_runs: FLOOD_LIMIT },
      calm: { key_sha256: sha(KEYS.calm) },
      narrow: { key_sha256: sha(KEYS.narrow), max_active_runs: 1 },
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

const post = async (key: string, body: Record<string, unknown>) => {
  const res = await stack.request('/v1/runs', { method: 'POST', json: body, key });
  expect(res.status).toBe(202);
  return (await res.json()) as RunObject;
};

describe("a tenant's tree of sub-runs", () => {
  it("runs within its tenant's max_active_runs, and another tenant's run starts within one step of a free slot", async () => {
    const tree = await post(KEYS.flood, { input: 'WIDE TREE', subagents: { enabled: true, max_batch: LEAVES } });
    await waitFor(() => seen.filter((s) => s === 'leaf start').length >= FLOOD_LIMIT, {
      what: "the tree's first sub-runs to be asking the model",
    });
    const beforeCalm = seen.length;
    const calm = await post(KEYS.calm, { input: 'CALM' });
    expect((await stack.waitForRun(calm.id, { key: KEYS.calm })).output?.content).toBe('calm done');
    // Between the calm run's POST and its model request, at most the flood tenant's slots' worth
    // of its sub-runs began a step: the calm run did not queue behind the tree's backlog.
    const after = seen.slice(beforeCalm);
    const leavesBeforeCalm = after.indexOf('calm');
    expect(leavesBeforeCalm).toBeGreaterThanOrEqual(0);
    expect(after.slice(0, leavesBeforeCalm).filter((s) => s === 'leaf start').length).toBeLessThanOrEqual(FLOOD_LIMIT);

    const done = await stack.waitForRun(tree.id, { key: KEYS.flood, timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect(done.usage_total.model_calls).toBe(LEAVES + 2);
    // Never more of the tenant's runs asked the model at once than its limit allows.
    expect(floodMostInFlight).toBeLessThanOrEqual(FLOOD_LIMIT);
    expect(floodMostInFlight).toBeGreaterThan(1);
    const usage = await stack.getJson('/v1/usage', KEYS.flood);
    expect(usage).toMatchObject({ active_runs: 0, queued_runs: 0 });
  });

  it("completes when it is deeper and wider than its tenant's max_active_runs (a run waiting on its sub-runs holds no slot)", async () => {
    const deep = await post(KEYS.narrow, { input: 'DEEP', subagents: { enabled: true } });
    const done = await stack.waitForRun(deep.id, { key: KEYS.narrow, timeoutMs: 30_000 });
    expect(done.status).toBe('completed');
    expect(done.output?.content).toMatch(/^DEEP: /);
    // The root, two mid runs and four leaves.
    expect(done.usage_total.model_calls).toBe(2 + 2 * 2 + 4);
    expect(await stack.getJson('/v1/usage', KEYS.narrow)).toMatchObject({ active_runs: 0, queued_runs: 0 });
  });
});

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunEvent } from '@agentq/shared/core';
import { RunStore } from '@agentq/shared/store';
import type { Handler } from '@agentq/scripted-llm';
import { firstUser, round } from '../fixtures/scenarios.js';
import { startStack, type Stack } from '../fixtures/services.js';
import { waitFor } from '../fixtures/wait.js';

// The bar for a cancel: a tree of 5,000 runs, busy (children fanning out, leaves in their
// tool calls, more queued), cancelled: no model step or tool call of it starts more than a second
// after the 202. The workers check their ancestors before they start anything, so the cost of
// the cancel for them does not grow with the tree.

const FANOUT = 71; // 1 + 71 + 71 × 71 = 5,113 runs
const handler: Handler = (req) => {
  const u = firstUser(req) ?? '';
  if (round(req) > 0) return { content: 'done' };
  if (u.startsWith('ROOT'))
    return {
      tool_calls: [
        { name: 'agent_query_batch', arguments: { prompts: Array.from({ length: FANOUT }, (_, i) => `CHILD ${i}`) } },
      ],
    };
  if (u.startsWith('CHILD'))
    return {
      tool_calls: [
        {
          name: 'agent_query_batch',
          arguments: { prompts: Array.from({ length: FANOUT }, (_, i) => `LEAF ${u} ${i}`) },
        },
      ],
    };
  return { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 3000, label: u } }] };
};

let stack: Stack;
let store: RunStore;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'agentq-tree-'));
  writeFileSync(
    join(dir, 'tenants.json'),
    JSON.stringify({ default: { max_runs_per_tree: 10_000, max_active_runs: 10_000 } }),
  );
  stack = await startStack({
    handler,
    env: { AGENT_CONCURRENCY: '100', TOOL_CONCURRENCY: '200', TENANTS_CONFIG: join(dir, 'tenants.json') },
  });
  store = new RunStore({ redis: stack.redis, prefix: stack.prefix });
});
afterAll(async () => stack?.close());

const eventMs = (e: RunEvent) => Number(e.id.split('-')[0]);

describe('cancelling a 5,000-run tree', () => {
  it('starts no model step and no tool call of the tree more than a second after the 202', async () => {
    const { id } = await stack.createRun({ input: 'ROOT', subagents: { enabled: true, max_batch: FANOUT } });
    await waitFor(async () => (await store.runs.descendants(id)).length >= 5000, {
      what: 'a tree of 5,000 runs',
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    const res = await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
    const answeredAt = Date.now();
    expect(res.status).toBe(202);
    const tree = [id, ...(await store.runs.descendants(id))];
    expect(tree.length).toBeGreaterThan(5000);
    await waitFor(
      async () => {
        const runs = await Promise.all(tree.map((r) => store.runs.getState(r)));
        return runs.every((r) => r && !['queued', 'running', 'requires_action'].includes(r.status));
      },
      { what: 'every run of the tree to end', timeoutMs: 60_000, intervalMs: 500 },
    );
    const endedAt = Date.now();
    let last = 0;
    const late: string[] = [];
    for (const r of tree) {
      for (const e of await store.events.read(r)) {
        if (e.type !== 'step.started' && e.type !== 'tool.started') continue;
        last = Math.max(last, eventMs(e) - answeredAt);
        if (eventMs(e) > answeredAt + 1000) late.push(`${r} ${e.type} +${eventMs(e) - answeredAt} ms`);
      }
    }
    console.log(
      `5,000-run tree: ${tree.length} runs; the last step or tool call started ${last} ms after the cancel's 202 ` +
        `(negative: before it); every run ended ${endedAt - answeredAt} ms after it`,
    );
    expect(late).toEqual([]);
  }, 240_000);
});

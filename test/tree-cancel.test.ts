import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunEvent, type RunObject } from '@agentq/shared/core';
import { RunStore } from '@agentq/shared/store';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';
import { bodyOf } from './fixtures/api-client.js';

// Cancel is O(1) for the workers: a cancel marks the run it names, and every job of every run
// below it checks its ancestors before it starts a model step or a tool call. The tree's other
// runs are ended and their queued work removed in bulk after.

const firstUser = (req: ChatRequest) => String(req.messages.find((m) => m.role === 'user')?.content ?? '');
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const FANOUT = 12;
const handler: Handler = (req) => {
  const u = firstUser(req);
  if (round(req) > 0) return { content: 'done' };
  // The root and each child fan out a batch; grandchildren each call a slow tool.
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
  if (u.startsWith('LEAF'))
    return { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 400, label: u } }], delayMs: 20 };
  if (u.startsWith('PARENT')) return { tool_calls: [{ name: 'agent_query', arguments: { prompt: 'KID' } }] };
  if (u.startsWith('KID')) return { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 300, label: 'kid' } }] };
  return { content: 'no scenario' };
};

let stack: Stack;
let store: RunStore;
beforeAll(async () => {
  stack = await startStack({ handler, env: { AGENT_CONCURRENCY: '50', TOOL_CONCURRENCY: '100' } });
  store = new RunStore({ redis: stack.redis, prefix: stack.prefix });
});
afterAll(async () => stack?.close());

const startsOf = (events: RunEvent[]) => events.filter((e) => e.type === 'step.started' || e.type === 'tool.started');
const eventMs = (e: RunEvent) => Number(e.id.split('-')[0]);

describe('cancelling a run tree', () => {
  it(
    'a run whose ancestor has ended starts no step and no tool call, ' +
      'and ends cancelled, even before the cancel reaches it',
    async () => {
      const { id } = await stack.createRun({ input: 'PARENT', subagents: { enabled: true } });
      const kid = await waitFor(
        async () => {
          const [c] = await store.runs.children(id);
          return c && stack.crm.calls.some((x) => x.args.label === 'kid') ? c.id : undefined;
        },
        { what: 'the sub-run to be in its tool call' },
      );
      // End only the parent, as a cancel's first write does, with no word to the workers: the
      // sub-run's next step must see it by itself.
      await store.runs.finish(id, { status: 'cancelled', stopReason: 'cancelled' });
      const kidRun = await stack.waitForRun(kid, { timeoutMs: 10_000 });
      expect(kidRun).toMatchObject({ status: 'cancelled', stop_reason: 'cancelled' });
      // Its tool call had started; no model step followed it.
      const steps = startsOf(await store.events.read(kid)).filter((e) => e.type === 'step.started');
      expect(steps).toHaveLength(1);
      expect(stack.llm.requests.filter((r) => firstUser(r) === 'KID')).toHaveLength(1);
    },
  );

  it(
    `stops a tree of ${1 + FANOUT + FANOUT * FANOUT} runs: nothing of it starts a second after the 202, ` +
      'every run not yet done ends cancelled',
    async () => {
      const { id } = await stack.createRun({ input: 'ROOT', subagents: { enabled: true, max_batch: FANOUT } });
      // Cancel while the tree is busy: grandchildren exist, some calling their tool, more queued.
      await waitFor(async () => (await store.runs.descendants(id)).length > FANOUT * 4, {
        what: 'a busy tree',
        timeoutMs: 20_000,
      });
      const res = await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
      expect(res.status).toBe(202);
      const answeredAt = Date.now();
      expect((await bodyOf<RunObject>(res)).status).toBe('cancelled');

      const tree = [id, ...(await store.runs.descendants(id))];
      expect(tree.length).toBeGreaterThan(FANOUT * 4);
      // Every run of the tree ends cancelled (those the walk missed, by their own next job).
      const unfinished = await waitFor(
        async () => {
          const runs = await Promise.all(tree.map((r) => store.runs.get(r)));
          return runs.every((r) => r && r.status !== 'queued' && r.status !== 'running') ? runs : undefined;
        },
        { what: 'every run of the tree to end', timeoutMs: 20_000 },
      );
      // Cancelled, all but those whose last step had begun before the cancel (they may complete:
      // that nothing started after it is checked below).
      for (const r of unfinished.filter((x) => x!.status !== 'cancelled')) expect(r!.status, r!.id).toBe('completed');
      expect(unfinished.filter((r) => r!.status === 'cancelled').length).toBeGreaterThan(FANOUT * 3);
      // Every run has ended, so nothing of the tree can start any more: when did anything last start?
      const late: string[] = [];
      for (const r of tree)
        for (const e of startsOf(await store.events.read(r)))
          if (eventMs(e) > answeredAt + 1000) late.push(`${r} ${e.type} +${eventMs(e) - answeredAt} ms`);
      expect(late).toEqual([]);
    },
  );
});

import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { newId, TERMINAL_STATUSES, type RunSpec } from '@agentq/shared/core';
import { createLogger } from '@agentq/shared/infra';
import { EVENTS_MAXLEN, RunStore } from '@agentq/shared/store';
import { JobQueues, QUEUES } from '@agentq/shared/jobs';
import { actionId, actionRun, Admission, RunActions, Runs, type ActionRecord } from '@agentq/shared/runs';
import { monitorRedis } from './fixtures/redis-monitor.js';

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());

// The events these writes append, as the workers send them.
const stepEvent = (depth: number) => ({
  depth,
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  finish_reason: 'tool_calls',
  content: null,
  tool_calls: [],
});
const toolEvent = (index: number) => ({
  depth: 0,
  index,
  tool_call_id: `call_${index}`,
  name: 'crm__search',
  is_error: false,
  duration_ms: 1,
  output: 'out',
});

const results = (id: string, output: string) => ({
  id,
  name: 'crm__search',
  status: 'completed' as const,
  outcome: 'ok' as const,
  output,
  is_error: false,
  attempts: 1,
  duration_ms: 1,
  started_at: new Date().toISOString(),
  completed_at: new Date().toISOString(),
});

const spec: RunSpec = {
  model: 'm',
  max_depth: 3,
  on_budget_exhausted: 'final_answer',
  metadata: {},
  ancestors: [],
  nesting: 0,
};

describe('the run index', () => {
  it('sheds the ids of runs created more than twice the retention ago', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}`, retentionSeconds: 60 });
    const now = Date.now();
    const old = newId('run', now - 10 * 60_000);
    const recent = newId('run', now - 60_000);
    await store.runs.create({ id: recent, tenant: 'o', spec, messages: [], createdAt: new Date(now - 60_000) });
    await store.runs.create({ id: old, tenant: 'o', spec, messages: [], createdAt: new Date(now - 10 * 60_000) });
    expect(await redis.zrange(store.global.runIndex('o'), '0', '-1')).toEqual([old, recent]);
    const fresh = newId('run', now);
    await store.runs.create({ id: fresh, tenant: 'o', spec, messages: [] });
    // The 10-minute-old id is past 2 × 60 s; the 1-minute-old one is not.
    expect(await redis.zrange(store.global.runIndex('o'), '0', '-1')).toEqual([recent, fresh]);
  });
});

describe('the run list', () => {
  /** 25 runs of one key, newest last; every third completed. Returns the store and the ids newest first. */
  async function listed() {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const ids: string[] = [];
    const now = Date.now();
    for (let i = 0; i < 25; i++) {
      const id = newId('run', now - (25 - i) * 1000);
      await store.runs.create({
        id,
        tenant: 'o',
        spec,
        messages: [{ role: 'user', content: `run ${i}` }],
        createdAt: new Date(now - (25 - i) * 1000),
      });
      if (i % 3 === 0)
        await store.runs.finish(id, {
          status: 'completed',
          stopReason: 'stop',
          output: { role: 'assistant', content: `answer ${i}` },
        });
      ids.push(id);
    }
    return { store, newest: ids.reverse() };
  }

  /** Reads a whole page the way the API does: each batch read before the next; the sizes given, the runs and the cursor. */
  async function page(store: RunStore, q: { limit: number; after?: string; status?: 'completed' | 'queued' }) {
    const batches = store.runs.list('o', q);
    const sizes: number[] = [];
    const runs: string[] = [];
    for (let b = await batches.next(); ; b = await batches.next()) {
      if (b.done) return { sizes, runs, next: b.value };
      sizes.push(b.value.bytes);
      runs.push(...(await b.value.read()).map((r) => r.id));
    }
  }

  it('pages across its batches of ten: no run twice, none left out, and no more read than the page needs', async () => {
    const { store, newest } = await listed();
    const first = await page(store, { limit: 12 });
    expect(first.runs).toEqual(newest.slice(0, 12));
    // Batches of ten, then only the two the page still needed (sized as two runs, not ten).
    expect(first.sizes).toHaveLength(2);
    expect(first.sizes[1]).toBeLessThan(first.sizes[0]! / 3);
    expect(first.next).toBe(newest[11]);
    const rest = await page(store, { limit: 100, after: first.next! });
    expect(rest.runs).toEqual(newest.slice(12));
    expect(rest.next).toBeNull();
  });

  it('with a status filter, sizes and reads only the runs that match, and pages them', async () => {
    const { store, newest } = await listed();
    const completed = newest.filter((_, i) => (24 - i) % 3 === 0);
    const all = await page(store, { limit: 100, status: 'completed' });
    expect(all.runs).toEqual(completed);
    const queuedOnly = await page(store, { limit: 100, status: 'queued' });
    expect(queuedOnly.runs).toEqual(newest.filter((id) => !completed.includes(id)));
    // What a batch counts is what its matching runs hold: the completed runs' batches hold their answers too.
    const unfiltered = await page(store, { limit: 100 });
    expect(all.sizes.reduce((a, b) => a + b, 0) + queuedOnly.sizes.reduce((a, b) => a + b, 0)).toBe(
      unfiltered.sizes.reduce((a, b) => a + b, 0),
    );
    const firstTwo = await page(store, { limit: 2, status: 'completed' });
    expect(firstTwo.runs).toEqual(completed.slice(0, 2));
    expect((await page(store, { limit: 100, status: 'completed', after: firstTwo.next! })).runs).toEqual(
      completed.slice(2),
    );
  });

  it('drops the ids of runs that are gone from the index as it passes them', async () => {
    const { store, newest } = await listed();
    await redis.del(store.keys(newest[3]!).run);
    const all = await page(store, { limit: 100 });
    expect(all.runs).toEqual(newest.filter((id) => id !== newest[3]));
    expect(await redis.zscore(store.global.runIndex('o'), newest[3]!)).toBeNull();
  });

  it('refuses to go on past a batch that was not read (its place in the index would not move)', async () => {
    const { store } = await listed();
    const batches = store.runs.list('o', { limit: 100 });
    await batches.next();
    await expect(batches.next()).rejects.toThrow(/without read\(\)/);
  });
});

/** A run whose step 0 asked for `n` tool calls, as the agent-worker leaves it. */
async function roundOf(n: number, runSpec: RunSpec = spec) {
  const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
  const id = newId('run');
  await store.runs.create({ id, tenant: 'o', spec: runSpec, messages: [{ role: 'user', content: 'hi' }] });
  const { run } = (await store.transcript.loadStep(id, 0))!;
  const tool_calls = Array.from({ length: n }, (_, i) => ({
    id: `call_${i}`,
    type: 'function' as const,
    function: { name: 'crm__search', arguments: `{"i":${i}}` },
  }));
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  const now = new Date().toISOString();
  await store.transcript.commitStep(
    run,
    {
      depth: 0,
      status: 'completed',
      model: 'm',
      usage,
      started_at: now,
      completed_at: now,
      message: { role: 'assistant', content: null, tool_calls },
    },
    stepEvent(0),
  );
  return { store, run, id };
}

describe("a round's tool messages", () => {
  it('are appended by the call that stores the last result, once and in call order', async () => {
    const { store, run, id } = await roundOf(3);
    const round = { count: 3, ancestors: run.spec.ancestors };
    const completes: boolean[] = [];
    for (const i of [2, 0, 1]) {
      expect((await store.transcript.loadStep(id, 1))!.roundAppended).toBe(false);
      completes.push(
        (await store.toolCalls.complete(id, 0, i, results(`call_${i}`, `out ${i}`), toolEvent(i), round)).roundComplete,
      );
    }
    // Only the last result completes the round: its caller enqueues the next step.
    expect(completes).toEqual([false, false, true]);
    expect(await store.transcript.roundComplete(id, 0)).toBe(true);
    // A redelivered call stores nothing new, appends nothing again, and completes nothing.
    const again = await store.toolCalls.complete(id, 0, 1, results('call_1', 'again'), toolEvent(1), round);
    expect(again).toMatchObject({ roundComplete: false, stored: { output: 'out 1' } });
    const turn = (await store.transcript.loadStep(id, 1))!;
    expect(turn.roundAppended).toBe(true);
    expect(turn.messages.slice(2)).toEqual(
      [0, 1, 2].map((i) => ({ role: 'tool', tool_call_id: `call_${i}`, content: `out ${i}` })),
    );
    expect(turn.run.depth).toBe(1);
    expect(turn.run.usage.tool_calls).toBe(3);
    expect((await store.runs.get(id))!.usage_total.tool_calls).toBe(3);
    expect(await redis.hkeys(store.keys(id).toolCalls(0))).toEqual(
      expect.not.arrayContaining(['0:msg', '1:msg', '2:msg']),
    );
  });

  it('are left to the next turn while a call has no result, or when the run has ended', async () => {
    const partial = await roundOf(2);
    await partial.store.toolCalls.complete(partial.id, 0, 0, results('call_0', 'out 0'), toolEvent(0), {
      count: 2,
      ancestors: partial.run.spec.ancestors,
    });
    expect((await partial.store.transcript.loadStep(partial.id, 1))!.roundAppended).toBe(false);
    expect(await partial.store.transcript.messages(partial.id)).toHaveLength(2);

    const ended = await roundOf(1);
    await ended.store.runs.finish(ended.id, { status: 'cancelled', stopReason: 'cancelled' });
    await ended.store.toolCalls.complete(ended.id, 0, 0, results('call_0', 'late'), toolEvent(0), {
      count: 1,
      ancestors: ended.run.spec.ancestors,
    });
    expect(await ended.store.transcript.messages(ended.id)).toHaveLength(2);
  });

  it('are never appended without the assistant message that asked for them (a commit a failover lost)', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const id = newId('run');
    await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
    const { run } = (await store.transcript.loadStep(id, 0))!;
    // The step at depth 0 was never committed here, but its call ran and stores its result.
    const done = await store.toolCalls.complete(id, 0, 0, results('call_0', 'out 0'), toolEvent(0), {
      count: 1,
      ancestors: run.spec.ancestors,
    });
    expect(done.roundComplete).toBe(false);
    expect(await store.transcript.messages(id)).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it("count toward the ancestors' usage_total", async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const parent = newId('run');
    await store.runs.create({ id: parent, tenant: 'o', spec, messages: [] });
    const child = await (async () => {
      const id = newId('run');
      const childSpec = { ...spec, ancestors: [parent], nesting: 1 };
      await store.runs.create({ id, tenant: 'o', spec: childSpec, messages: [{ role: 'user', content: 'x' }] });
      const { run } = (await store.transcript.loadStep(id, 0))!;
      const now = new Date().toISOString();
      const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
      const message = {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id: 'c', type: 'function' as const, function: { name: 't', arguments: '{}' } }],
      };
      await store.transcript.commitStep(
        run,
        { depth: 0, status: 'completed', model: 'm', usage, started_at: now, completed_at: now, message },
        stepEvent(0),
      );
      return { id, run };
    })();
    await store.toolCalls.complete(child.id, 0, 0, results('c', 'ok'), toolEvent(0), {
      count: 1,
      ancestors: child.run.spec.ancestors,
    });
    expect((await store.runs.get(parent))!.usage_total.tool_calls).toBe(1);
    expect((await store.runs.get(child.id))!.usage.tool_calls).toBe(1);
    // The child's next step: its tokens and calls add to what it, and its parent's total, had.
    const { run } = (await store.transcript.loadStep(child.id, 1))!;
    const now = new Date().toISOString();
    const usage = { prompt_tokens: 40, completion_tokens: 2, total_tokens: 42 };
    await store.transcript.commitStep(
      run,
      {
        depth: 1,
        status: 'completed',
        model: 'm',
        usage,
        started_at: now,
        completed_at: now,
        message: { role: 'assistant', content: 'done' },
      },
      stepEvent(1),
    );
    // Committed again (a redelivered step): nothing is counted twice.
    await store.transcript.commitStep(
      run,
      {
        depth: 1,
        status: 'completed',
        model: 'm',
        usage,
        started_at: now,
        completed_at: now,
        message: { role: 'assistant', content: 'other' },
      },
      stepEvent(1),
    );
    const counted = { prompt_tokens: 41, completion_tokens: 3, total_tokens: 44, model_calls: 2, tool_calls: 1 };
    const childNow = (await store.runs.get(child.id))!;
    expect(childNow.usage).toEqual(counted);
    expect(childNow.usage_total).toEqual(counted);
    expect(childNow.depth).toBe(1);
    expect((await store.runs.get(parent))!.usage_total).toEqual(counted);
    expect((await store.runs.get(parent))!.usage).toEqual({
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
      model_calls: 0,
      tool_calls: 0,
    });
  });
});

describe("a run's event stream", () => {
  it("keeps about EVENTS_MAXLEN events: a round's tool events append, the next step's commit trims", async () => {
    const { store, run, id } = await roundOf(2);
    const events = store.keys(id).events;
    // A long run's history: more than the stream keeps.
    const fill = redis.pipeline();
    for (let i = 0; i < EVENTS_MAXLEN + 500; i++) fill.xadd(events, '*', 'type', 'step.retry', 'data', '{}');
    await fill.exec();
    const before = await redis.xlen(events);
    await Promise.all(
      [0, 1].map((i) =>
        store.toolCalls.begin(id, 0, i, 1, {
          event: { depth: 0, index: i, tool_call_id: `call_${i}`, name: 'crm__search', attempt: 1 },
        }),
      ),
    );
    await Promise.all(
      [0, 1].map((i) =>
        store.toolCalls.complete(id, 0, i, results(`call_${i}`, `out ${i}`), toolEvent(i), {
          count: 2,
          ancestors: run.spec.ancestors,
        }),
      ),
    );
    // The round's four events are appended, nothing trimmed.
    expect(await redis.xlen(events)).toBe(before + 4);
    const { run: next } = (await store.transcript.loadStep(id, 1))!;
    const now = new Date().toISOString();
    await store.transcript.commitStep(
      next,
      {
        depth: 1,
        status: 'completed',
        model: 'm',
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        started_at: now,
        completed_at: now,
        message: { role: 'assistant', content: 'done' },
      },
      stepEvent(1),
    );
    // Trimmed by whole nodes of the stream (100 entries each): about the cap, the newest kept.
    const after = await redis.xlen(events);
    expect(after).toBeGreaterThanOrEqual(EVENTS_MAXLEN);
    expect(after).toBeLessThan(EVENTS_MAXLEN + 100);
    const [[, last]] = await redis.xrevrange(events, '+', '-', 'COUNT', 1);
    expect(last[1]).toBe('step.completed');
  });
});

describe("a round's requests for an answer", () => {
  it("tell the root's webhook (run.requires_action) once, also when the step that stored them died before queuing it: its redo queues it", async () => {
    const prefix = `rs${randomBytes(3).toString('hex')}`;
    const logger = createLogger({ service: 'test', level: 'silent' });
    const store = new RunStore({ redis, prefix });
    const jobs = new JobQueues({ connection: redis, prefix, cells: 1, logger });
    const runs = new Runs({ store, jobs, admission: new Admission(redis, prefix), logger });
    const actions = new RunActions({ store, jobs, runs, logger });
    try {
      const id = newId('run');
      await store.runs.create({
        id,
        tenant: 'o',
        spec: { ...spec, webhook: { url: 'https://hooks.example/agentq' } },
        messages: [{ role: 'user', content: 'hi' }],
      });
      await store.runs.start(id);
      const run = (await store.runs.getState(id))!;
      const records: ActionRecord[] = [0, 1].map((index) => ({
        id: actionId(id, 0, index),
        type: 'approval',
        run_id: id,
        tool_call_id: `call_${index}`,
        name: 'crm__update_contact',
        arguments: '{}',
        created_at: new Date().toISOString(),
        expires_at: null,
        depth: 0,
        index,
        on_timeout: 'reject',
      }));
      const requiresAction = async () =>
        (await jobs.queue(QUEUES.webhook, 0).getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter(
          (j) => j.data.type === 'run.requires_action',
        );
      // The first delivery of the step stored the requests and died.
      await store.actions.require(actionRun(run), records);
      expect(await requiresAction()).toHaveLength(0);
      // Its redo asks nothing twice, and queues the webhook; a third delivery adds no second one.
      await actions.require(run, records);
      await actions.require(run, records);
      const queued = await requiresAction();
      expect(queued).toHaveLength(1);
      expect(queued[0].data).toMatchObject({ runId: id, webhookId: `whk_${id.slice('run_'.length)}_a0` });
      expect((await store.runs.getState(id))!.status).toBe('requires_action');
    } finally {
      await jobs.close();
    }
  });
});

describe('beginning tool calls', () => {
  const started = (index: number) => ({
    depth: 0,
    index,
    tool_call_id: `call_${index}`,
    name: 'crm__search',
    attempt: 1,
  });

  it('begins the calls of a step begun together in one script, each as if begun alone', async () => {
    const prefix = `rs${randomBytes(3).toString('hex')}`;
    const store = new RunStore({ redis, prefix });
    const id = newId('run');
    await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
    // Call 1 finished before (a retried round): it is done, the others begin.
    await store.toolCalls.complete(id, 0, 1, results('call_1', 'earlier'), toolEvent(1), { count: 5, ancestors: [] });
    {
      const begins = await Promise.all([0, 1, 2].map((i) => store.toolCalls.begin(id, 0, i, 1, { event: started(i) })));
      expect(begins.map((b) => b.kind)).toEqual(['begun', 'done', 'begun']);
      expect(begins[1]).toMatchObject({ result: { output: 'earlier' } });
      for (const b of [begins[0], begins[2]])
        expect(b).toMatchObject({ run: { id, status: 'queued', spec: { model: 'm' } }, interrupted: null });
      // The same calls begun again (their worker died): each sees its own earlier attempt's marker.
      await store.toolCalls.begin(id, 0, 2, 3);
      const again = await Promise.all([0, 2].map((i) => store.toolCalls.begin(id, 0, i, 4)));
      expect(again.map((b) => (b.kind === 'begun' ? b.interrupted?.attempts : b.kind))).toEqual([1, 3]);
      await store.toolCalls.begin(id, 0, 3, 1, { event: started(3) });
      // The same call begun twice in one batch: the second sees the first's marker.
      const twice = await Promise.all([5, 6].map((attempts) => store.toolCalls.begin(id, 0, 4, attempts)));
      expect(twice.map((b) => (b.kind === 'begun' ? (b.interrupted?.attempts ?? null) : b.kind))).toEqual([null, 5]);
    }
    const events = await store.events.read(id, '0');
    expect(events.filter((e) => e.type === 'tool.started').map((e) => (e.data as { index: number }).index)).toEqual([
      0, 2, 3,
    ]);
    expect(await redis.hget(store.keys(id).toolCalls(0), '1:running')).toBeNull();
  });

  it('begins none of them once the run or an ancestor has ended', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const parent = newId('run');
    await store.runs.create({ id: parent, tenant: 'o', spec, messages: [] });
    const child = newId('run');
    await store.runs.create({
      id: child,
      tenant: 'o',
      spec: { ...spec, ancestors: [parent], nesting: 1 },
      messages: [],
    });
    await store.runs.finish(parent, { status: 'cancelled', stopReason: 'cancelled' });
    const begins = await Promise.all(
      [0, 1].map((i) => store.toolCalls.begin(child, 0, i, 1, { ancestors: [parent], event: started(i) })),
    );
    expect(begins).toEqual([0, 1].map(() => expect.objectContaining({ kind: 'ended', ancestorOver: true })));
    await store.runs.finish(child, { status: 'cancelled', stopReason: 'cancelled' });
    const ended = await Promise.all([0, 1].map((i) => store.toolCalls.begin(child, 0, i, 1, { event: started(i) })));
    expect(ended.map((b) => [b.kind, 'ancestorOver' in b])).toEqual([
      ['ended', false],
      ['ended', false],
    ]);
    expect(await redis.hgetall(store.keys(child).toolCalls(0))).toEqual({});
    expect((await store.events.read(child, '0')).filter((e) => e.type === 'tool.started')).toEqual([]);
  });

  it('still reports a stored result as done when the run has ended', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const id = newId('run');
    await store.runs.create({ id, tenant: 'o', spec, messages: [] });
    await store.toolCalls.complete(id, 0, 1, results('call_1', 'earlier'), toolEvent(1), { count: 2, ancestors: [] });
    await store.runs.finish(id, { status: 'cancelled', stopReason: 'cancelled' });
    const begins = await Promise.all([0, 1].map((i) => store.toolCalls.begin(id, 0, i, 1, { event: started(i) })));
    expect(begins.map((b) => b.kind)).toEqual(['ended', 'done']);
  });

  it('keeps the calls of different steps and runs apart, begun in the same tick', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const [a, b] = [newId('run'), newId('run')];
    for (const id of [a, b]) await store.runs.create({ id, tenant: 'o', spec, messages: [] });
    await store.toolCalls.complete(b, 1, 0, results('call_0', 'b1'), toolEvent(0), { count: 1, ancestors: [] });
    const begins = await Promise.all([
      store.toolCalls.begin(a, 0, 0, 1),
      store.toolCalls.begin(b, 0, 0, 1),
      store.toolCalls.begin(b, 1, 0, 1),
      store.toolCalls.begin(a, 0, 1, 1),
    ]);
    expect(begins.map((x) => (x.kind === 'done' ? x.result.output : x.kind === 'begun' ? x.run.id : x.kind))).toEqual([
      a,
      b,
      'b1',
      a,
    ]);
    expect(Object.keys(await redis.hgetall(store.keys(a).toolCalls(0))).sort()).toEqual(['0:running', '1:running']);
    expect(Object.keys(await redis.hgetall(store.keys(b).toolCalls(0)))).toEqual(['0:running']);
  });

  it('does not read the spec the caller holds, but reads its own for a run created again under its id', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const id = newId('run');
    await store.runs.create({ id, tenant: 'o', spec, messages: [] });
    const first = await store.toolCalls.begin(id, 0, 0, 1);
    if (first.kind !== 'begun') throw new Error(`not begun: ${first.kind}`);
    // As read: the spec with its stored size, what a caller holds for the run's next rounds.
    expect(first.spec).toEqual({ value: spec, bytes: Buffer.byteLength(JSON.stringify(spec)) });
    // Held (told apart by its model): the begin script does not read the spec, and the calls see the one held.
    const held = { createdAt: first.run.createdAt, spec: { value: { ...spec, model: 'held' }, bytes: 10 } };
    const scripts: string[][] = [];
    const monitor = await monitorRedis(inject('redisUrl'), (c) => {
      if (/^evalsha$/i.test(c.args[0] ?? '') && c.args.includes(store.keys(id).run)) scripts.push(c.args);
    });
    try {
      const next = await Promise.all([0, 1].map((i) => store.toolCalls.begin(id, 1, i, 1, { held })));
      expect(next).toEqual(
        [0, 1].map(() =>
          expect.objectContaining({
            kind: 'begun',
            spec: held.spec,
            run: expect.objectContaining({ spec: held.spec.value, status: 'queued' }),
          }),
        ),
      );
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      monitor.close();
    }
    expect(scripts).toHaveLength(1);
    expect(scripts[0]).toContain('status');
    expect(scripts[0]).not.toContain('spec');
    // A run created again under its id is another run: its own spec is read, whatever is held.
    await redis.del(...Object.values(store.keys(id)).filter((v): v is string => typeof v === 'string'));
    await store.runs.create({
      id,
      tenant: 'o',
      spec: { ...spec, model: 'again' },
      messages: [],
      createdAt: new Date(Date.now() + 1000),
    });
    const again = await store.toolCalls.begin(id, 0, 0, 1, { held });
    expect(again).toMatchObject({
      kind: 'begun',
      spec: { value: { model: 'again' } },
      run: { spec: { model: 'again' } },
    });
    // And a gone run is gone, spec held or not: nothing begins.
    await redis.del(store.keys(id).run);
    expect(await store.toolCalls.begin(id, 2, 0, 1, { held })).toEqual({ kind: 'ended', run: null });
    expect(await redis.exists(store.keys(id).toolCalls(2))).toBe(0);
  });

  it('fails only the call whose stored result cannot be read, and every call when the script fails', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const id = newId('run');
    await store.runs.create({ id, tenant: 'o', spec, messages: [] });
    await redis.hset(store.keys(id).toolCalls(0), '1', 'not json');
    const one = await Promise.allSettled([0, 1, 2].map((i) => store.toolCalls.begin(id, 0, i, 1)));
    expect(one.map((x) => (x.status === 'fulfilled' ? x.value.kind : 'rejected'))).toEqual([
      'begun',
      'rejected',
      'begun',
    ]);
    // A run key of the wrong type: the script fails, and so does every call of the group.
    const gone = newId('run');
    await redis.set(store.keys(gone).run, 'not a hash');
    const all = await Promise.allSettled([0, 1].map((i) => store.toolCalls.begin(gone, 0, i, 1)));
    expect(all.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    // Nothing of the failed group is left behind: the same calls begin once the run is there.
    await redis.del(store.keys(gone).run);
    await store.runs.create({ id: gone, tenant: 'o', spec, messages: [] });
    const later = await Promise.all([0, 1].map((i) => store.toolCalls.begin(gone, 0, i, 1)));
    expect(later.map((x) => x.kind)).toEqual(['begun', 'begun']);
  });
});

describe('completing a tool call', () => {
  it("stores the results of a step completed together in one script, each as if alone, the round's messages in call order", async () => {
    const { store, run, id } = await roundOf(3);
    // Call 1's result was stored before (a redelivered call): it keeps the earlier one.
    await store.toolCalls.complete(id, 0, 1, results('call_1', 'earlier'), toolEvent(1), {
      count: 3,
      ancestors: run.spec.ancestors,
    });
    {
      const stored = await Promise.all(
        [2, 1, 0].map((i) =>
          store.toolCalls.complete(id, 0, i, results(`call_${i}`, `out ${i}`), toolEvent(i), {
            count: 3,
            ancestors: run.spec.ancestors,
          }),
        ),
      );
      expect(stored.map((r) => r.stored.output)).toEqual(['out 2', 'earlier', 'out 0']);
      expect(stored.map((r) => r.roundComplete)).toEqual([true, true, true]);
      const turn = (await store.transcript.loadStep(id, 1))!;
      expect(turn.roundAppended).toBe(true);
      expect(turn.messages.slice(2).map((m) => m.content)).toEqual(['out 0', 'earlier', 'out 2']);
      expect(turn.run.usage.tool_calls).toBe(3);
      // One tool.completed for each result stored: call 1's earlier one, then 2 and 0 in the order they came.
      const completed = (await redis.xrange(store.keys(id).events, '-', '+'))
        .filter(([, f]) => f[1] === 'tool.completed')
        .map(([, f]) => JSON.parse(f[3]!));
      expect(completed.map((e) => e.index)).toEqual([1, 2, 0]);
    }
  });

  it('keeps the first of two results of one call completed together (as if one came after the other)', async () => {
    const { store, run, id } = await roundOf(2);
    const stored = await Promise.all(
      ['first', 'second'].map((out) =>
        store.toolCalls.complete(id, 0, 0, results('call_0', out), toolEvent(0), {
          count: 2,
          ancestors: run.spec.ancestors,
        }),
      ),
    );
    expect(stored.map((r) => r.stored.output)).toEqual(['first', 'first']);
    const completed = (await redis.xrange(store.keys(id).events, '-', '+')).filter(
      ([, f]) => f[1] === 'tool.completed',
    );
    expect(completed).toHaveLength(1);
    // The round completes with the result kept.
    await store.toolCalls.complete(id, 0, 1, results('call_1', 'out 1'), toolEvent(1), {
      count: 2,
      ancestors: run.spec.ancestors,
    });
    expect((await store.transcript.messages(id)).slice(2).map((m) => m.content)).toEqual(['first', 'out 1']);
  });

  it("writes a round's messages to the hash only while the round is incomplete", async () => {
    const { store, run, id } = await roundOf(3);
    const hash = store.keys(id).toolCalls(0);
    {
      // Call 0 alone: the round is incomplete, so its message waits in the hash.
      await store.toolCalls.complete(id, 0, 0, results('call_0', 'out 0'), toolEvent(0), {
        count: 3,
        ancestors: run.spec.ancestors,
      });
      expect((await redis.hkeys(hash)).filter((f) => f.endsWith(':msg'))).toEqual(['0:msg']);
      // Calls 1 and 2 together complete the round: appended from the script's arguments.
      await Promise.all(
        [1, 2].map((i) =>
          store.toolCalls.complete(id, 0, i, results(`call_${i}`, `out ${i}`), toolEvent(i), {
            count: 3,
            ancestors: run.spec.ancestors,
          }),
        ),
      );
      const turn = (await store.transcript.loadStep(id, 1))!;
      expect(turn.messages.slice(2).map((m) => m.content)).toEqual(['out 0', 'out 1', 'out 2']);
      expect((await redis.hkeys(hash)).filter((f) => f.endsWith(':msg'))).toEqual([]);
    }
  });

  it('is stored when Redis has lost its scripts (a restart without persistence, SCRIPT FLUSH)', async () => {
    const conn = new Redis(inject('redisUrl'));
    try {
      const store = new RunStore({ redis: conn, prefix: `rs${randomBytes(3).toString('hex')}` });
      const id = newId('run');
      await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
      const round = { count: 2, ancestors: [] };
      await store.toolCalls.complete(id, 0, 1, results('call_1', 'one'), toolEvent(1), round);
      await conn.script('FLUSH');
      const done = await store.toolCalls.complete(id, 0, 0, results('call_0', 'zero'), toolEvent(0), round);
      expect(done.stored.output).toBe('zero');
      expect(JSON.parse((await conn.hget(store.keys(id).toolCalls(0), '0'))!)).toMatchObject({ output: 'zero' });
    } finally {
      conn.disconnect();
    }
  });
});

describe('the scripts see every terminal status (generated from the one list)', () => {
  it.each([...TERMINAL_STATUSES])(
    'a run that is %s takes no step, no tool call and no second ending',
    async (status) => {
      const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
      const id = newId('run');
      await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
      const { run } = (await store.transcript.loadStep(id, 0))!;
      // Set the status directly, as another process's ending would have.
      await redis.hset(store.keys(id).run, 'status', status);
      const now = new Date().toISOString();
      const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
      const step = {
        depth: 0,
        status: 'completed' as const,
        model: 'm',
        usage,
        started_at: now,
        completed_at: now,
        message: { role: 'assistant' as const, content: 'late' },
      };
      expect(await store.transcript.commitStep(run, step, stepEvent(0))).toBeNull();
      expect((await store.toolCalls.begin(id, 0, 0, 1)).kind).toBe('ended');
      const late = await store.toolCalls.complete(id, 0, 0, results('call_0', 'late'), toolEvent(0), {
        count: 1,
        ancestors: [],
      });
      expect(late.roundComplete).toBe(false);
      expect(await store.runs.finish(id, { status: 'failed', stopReason: 'error' })).toBeNull();
      expect(await store.transcript.messages(id)).toEqual([{ role: 'user', content: 'hi' }]);
      expect((await store.runs.get(id))!.status).toBe(status);
    },
  );
});

describe('a tool result', () => {
  it('keeps its outcome kind beside the text the model sees, and /steps shows both', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const id = newId('run');
    await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
    const { run } = (await store.transcript.loadStep(id, 0))!;
    const now = new Date().toISOString();
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    const tool_calls = [{ id: 'call_0', type: 'function' as const, function: { name: 'crm__write', arguments: '{}' } }];
    await store.transcript.commitStep(
      run,
      {
        depth: 0,
        status: 'completed',
        model: 'm',
        usage,
        started_at: now,
        completed_at: now,
        message: { role: 'assistant', content: null, tool_calls },
      },
      stepEvent(0),
    );
    const output = 'Error executing crm__write: the outcome is unknown';
    await store.toolCalls.complete(
      id,
      0,
      0,
      { ...results('call_0', output), status: 'failed', is_error: true, outcome: 'unknown_outcome' },
      toolEvent(0),
      { count: 1, ancestors: run.spec.ancestors },
    );
    const [step] = await store.steps.list(id);
    expect(step.tool_calls[0]).toMatchObject({
      id: 'call_0',
      status: 'failed',
      is_error: true,
      outcome: 'unknown_outcome',
      output,
    });
  });
});

describe('a step reading a transcript whose start it holds', () => {
  async function runWithRound() {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const id = newId('run');
    await store.runs.create({
      id,
      tenant: 'o',
      spec,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
    });
    const first = (await store.transcript.loadStep(id, 0))!;
    const now = new Date().toISOString();
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
    const tool_calls = [
      { id: 'call_0', type: 'function' as const, function: { name: 'crm__search', arguments: '{}' } },
    ];
    await store.transcript.commitStep(
      first.run,
      {
        depth: 0,
        status: 'completed',
        model: 'm',
        usage,
        started_at: now,
        completed_at: now,
        message: { role: 'assistant', content: null, tool_calls },
      },
      stepEvent(0),
    );
    await store.toolCalls.complete(id, 0, 0, results('call_0', 'found ü'), toolEvent(0), {
      count: 1,
      ancestors: first.run.spec.ancestors,
    });
    return { store, id, first };
  }

  it('reads only what was added after it, and gets what a whole read gets', async () => {
    const { store, id, first } = await runWithRound();
    const bytes = (messages: unknown[]) =>
      messages.reduce((n: number, m) => n + Buffer.byteLength(JSON.stringify(m)), 0);
    expect(first.size).toBe(bytes(first.messages));
    const whole = (await store.transcript.loadStep(id, 1))!;
    expect(whole.messages).toHaveLength(4);
    // The size kept with every append (creation, the step's commit, the round's results; "ü" is two bytes).
    expect(whole.size).toBe(bytes(whole.messages));
    const known = { createdAt: first.run.createdAt, messages: first.messages, size: first.size };
    const tail = (await store.transcript.loadStep(id, 1, known))!;
    expect(tail.messages).toEqual(whole.messages);
    expect(tail.size).toBe(whole.size);
    expect(tail.roundAppended).toBe(true);
  });

  it('within a size, reads the messages only if the whole transcript fits, and says its size if not', async () => {
    const { store, id, first } = await runWithRound();
    const whole = (await store.transcript.loadStep(id, 1))!;
    const over = await store.transcript.loadStepWithin(id, 1, whole.size - 1);
    expect(over).toMatchObject({ tooLarge: true, head: { size: whole.size, length: 4, run: { id } } });
    expect(over && 'messages' in over).toBe(false);
    expect(await store.transcript.loadStepWithin(id, 1, whole.size)).toMatchObject({
      messages: whole.messages,
      size: whole.size,
    });
    // The start it holds counts too: what a step holds is the whole transcript.
    const known = { createdAt: first.run.createdAt, messages: first.messages, size: first.size };
    expect(await store.transcript.loadStepWithin(id, 1, whole.size - 1, known)).toMatchObject({
      tooLarge: true,
      head: { size: whole.size },
    });
    expect(await store.transcript.loadStepWithin(id, 1, whole.size, known)).toMatchObject({
      messages: whole.messages,
      size: whole.size,
    });
  });

  it('reads the run by its fields, not the markers of every step, and not the spec it holds', async () => {
    const { store, id, first } = await runWithRound();
    // Deeper: two more steps, each with its two markers in the run hash.
    for (const depth of [1, 2]) {
      const now = new Date().toISOString();
      const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
      const tool_calls = [
        { id: `call_${depth}`, type: 'function' as const, function: { name: 'crm__search', arguments: '{}' } },
      ];
      await store.transcript.commitStep(
        first.run,
        {
          depth,
          status: 'completed',
          model: 'm',
          usage,
          started_at: now,
          completed_at: now,
          message: { role: 'assistant', content: null, tool_calls },
        },
        stepEvent(depth),
      );
      await store.toolCalls.complete(
        id,
        depth,
        0,
        results(`call_${depth}`, 'ok'),
        { ...toolEvent(0), depth },
        { count: 1, ancestors: first.run.spec.ancestors },
      );
    }
    const whole = (await store.transcript.loadStep(id, 3))!;
    expect(whole).toMatchObject({
      roundAppended: true,
      done: false,
      spec: { value: spec, bytes: Buffer.byteLength(JSON.stringify(spec)) },
    });
    expect(whole.run).toMatchObject({ spec, depth: 3, usage: { model_calls: 3, tool_calls: 3 } });
    const reads: string[][] = [];
    const stepReads: string[][] = [];
    const monitor = await monitorRedis(inject('redisUrl'), (c) => {
      if (c.args[1] === store.keys(id).run) reads.push(c.args);
      if (c.args[1] === store.keys(id).steps && c.source !== 'lua') stepReads.push(c.args);
    });
    try {
      // A spec held: what the step sees is the one held (here told apart by its model), and the
      // run's reads name neither the spec nor any step's markers but the two rounds' it needs.
      const held = { value: { ...spec, model: 'held' }, bytes: 10 };
      const known = { createdAt: whole.run.createdAt, messages: whole.messages.slice(0, -2), size: 1, spec: held };
      const tail = (await store.transcript.loadStep(id, 3, known))!;
      expect(tail).toMatchObject({
        spec: held,
        run: { spec: { model: 'held' }, depth: 3 },
        roundAppended: true,
        done: false,
      });
      expect(tail.messages).toEqual(whole.messages);
      expect(tail.step).toBeNull();
      await new Promise((r) => setTimeout(r, 50));
      expect(reads.map((r) => r[0].toLowerCase())).toEqual(['hmget']);
      // No step is stored at this depth (its marker is not set): the steps are not read.
      expect(stepReads).toEqual([]);
      // Once it is, a job that comes again reads it.
      const now = new Date().toISOString();
      await store.transcript.commitStep(
        tail.run,
        {
          depth: 3,
          status: 'completed',
          model: 'm',
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          started_at: now,
          completed_at: now,
          message: { role: 'assistant', content: 'the end' },
        },
        stepEvent(3),
      );
      const again = (await store.transcript.loadStep(id, 3, known))!;
      expect(again.step).toMatchObject({ depth: 3, message: { content: 'the end' } });
      await new Promise((r) => setTimeout(r, 50));
      expect(stepReads.map((r) => [r[0].toLowerCase(), r[2]])).toEqual([['hget', '3']]);
    } finally {
      monitor.close();
    }
    const fields = reads[0].slice(2);
    expect(fields).not.toContain('spec');
    expect(fields.filter((f) => f.startsWith('m:'))).toEqual(['m:t:2', 'm:t:3', 'm:a:3']);
    // A run created again under its id is another run: its own spec is read.
    await redis.del(...Object.values(store.keys(id)).filter((v): v is string => typeof v === 'string'));
    await store.runs.create({
      id,
      tenant: 'o',
      spec: { ...spec, model: 'again' },
      messages: [{ role: 'user', content: 'hi' }],
      createdAt: new Date(Date.now() + 1000),
    });
    const stale = { createdAt: whole.run.createdAt, messages: whole.messages.slice(0, 1), size: 1, spec: whole.spec };
    expect((await store.transcript.loadStep(id, 0, stale))!.run.spec.model).toBe('again');
    // And a gone run is gone, spec held or not.
    await redis.del(store.keys(id).run);
    expect(await store.transcript.loadStep(id, 0, stale)).toBeNull();
  });

  it('reads the whole transcript when what it holds is not that transcript’s start', async () => {
    const { store, id, first } = await runWithRound();
    const whole = (await store.transcript.loadStep(id, 1))!;
    const bogus = (n: number) =>
      Array.from({ length: n }, () => ({ role: 'user' as const, content: 'not this run’s' }));
    // Another run that had this id (deleted, created again): its creation time differs.
    const recreated = { createdAt: new Date(0).toISOString(), messages: bogus(2), size: 1 };
    // Longer than the transcript: cannot be its start.
    const longer = { createdAt: first.run.createdAt, messages: bogus(5), size: 1 };
    for (const known of [recreated, longer]) {
      const read = (await store.transcript.loadStep(id, 1, known))!;
      expect(read.messages).toEqual(whole.messages);
      expect(read.size).toBe(whole.size);
    }
  });
});

describe("a page of a run's events", () => {
  it('holds no more than its bytes: an event that does not fit is named, and one larger than a page is read alone', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}` });
    const runId = newId('run');
    const key = store.events.key(runId);
    try {
      const sizes = [1_000, 2_000, 50_000, 3_000, 200_000, 10];
      const ids: string[] = [];
      for (const n of sizes)
        ids.push(
          (await redis.xadd(key, '*', 'type', 'step.completed', 'data', JSON.stringify({ content: 'x'.repeat(n) })))!,
        );
      // As stored: the fields' names and values.
      const stored = (n: number) =>
        'type'.length + 'step.completed'.length + 'data'.length + JSON.stringify({ content: 'x'.repeat(n) }).length;

      const first = await store.events.readPage(runId, '0', 200, 10_000);
      expect(first.events.map((e) => e.id)).toEqual(ids.slice(0, 2));
      expect(first.next).toEqual({ id: ids[2], bytes: stored(50_000) });
      // A page also stops at its count.
      expect((await store.events.readPage(runId, '0', 1, 1 << 20)).events.map((e) => e.id)).toEqual([ids[0]]);
      expect((await store.events.readPage(runId, '0', 1, 1 << 20)).next).toBeNull();

      const second = await store.events.readPage(runId, ids[1], 200, 64_000);
      expect(second.events.map((e) => e.id)).toEqual(ids.slice(2, 4));
      expect(second.next).toEqual({ id: ids[4], bytes: stored(200_000) });
      // Alone larger than a page: nothing in the page, the event named, then read by itself.
      const alone = await store.events.readPage(runId, ids[3], 200, 64_000);
      expect(alone).toEqual({ events: [], next: { id: ids[4], bytes: stored(200_000) } });
      const read = await store.events.readOne(runId, ids[4]);
      // As stored: the data is the JSON it was written as.
      expect(read).toEqual({
        id: ids[4],
        type: 'step.completed',
        data: JSON.stringify({ content: 'x'.repeat(200_000) }),
      });
      expect(await store.events.readOne(runId, '1-1')).toBeNull();

      const rest = await store.events.readPage(runId, ids[4], 200, 64_000);
      expect(rest).toEqual({ events: [expect.objectContaining({ id: ids[5], type: 'step.completed' })], next: null });
      expect(await store.events.readPage(runId, ids[5], 200, 64_000)).toEqual({ events: [], next: null });
    } finally {
      await redis.del(key);
    }
  });
});

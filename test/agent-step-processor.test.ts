import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { Job } from 'bullmq';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { newId, type RunSpec } from '@agentq/shared/core';
import { createLogger } from '@agentq/shared/infra';
import { RunStore, type StepRecord } from '@agentq/shared/store';
import { JobQueues, QUEUES } from '@agentq/shared/jobs';
import { Admission, RunActions, Runs } from '@agentq/shared/runs';
import { startScriptedLlm, type ScriptedLlm } from '@agentq/scripted-llm';
import { processAgentStep, TranscriptsInFlight, type AgentStepDeps } from '@agentq/agent-worker';

const step = (names: string[]): StepRecord => ({
  depth: 0,
  status: 'completed',
  model: 'm',
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  started_at: '2026-01-01T00:00:00.000Z',
  completed_at: '2026-01-01T00:00:01.000Z',
  message: {
    role: 'assistant',
    content: null,
    tool_calls: names.map((name, i) => ({
      id: `call_${i}`,
      type: 'function' as const,
      function: { name, arguments: '{}' },
    })),
  },
});

// The steps below run against the tests' Redis and one scripted model.
const redis = new Redis(inject('redisUrl'));
const queueRedis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
let llm: ScriptedLlm;
afterAll(async () => {
  await llm?.close();
  redis.disconnect();
  queueRedis.disconnect();
});

/** What processAgentStep needs, on the tests' Redis under the store's prefix, with the scripted model. */
function stepDeps(store: RunStore, prefix: string, extra: Partial<AgentStepDeps> = {}) {
  const logger = createLogger({ service: 'test', level: 'silent' });
  const jobs = new JobQueues({ connection: queueRedis, prefix, logger });
  const runs = new Runs({ store, jobs, admission: new Admission(redis, prefix), logger });
  const openai = new OpenAI({ baseURL: llm.baseURL, apiKey: 'x', maxRetries: 0 });
  const deps: AgentStepDeps = {
    store,
    runs,
    jobs,
    actions: new RunActions({ store, jobs, runs, logger }),
    actionParkMs: 60_000,
    openai,
    logger,
    tools: async () => [],
    modelTimeoutMs: 10_000,
    modelIdleTimeoutMs: 10_000,
    ...extra,
  };
  return deps;
}

describe('a step whose previous round lacks a result', () => {
  const prefix = `atp${randomBytes(3).toString('hex')}`;
  const now = new Date().toISOString();
  /** A run whose step 0 is committed, asking for crm__t0 and crm__t1; no call has a result yet. */
  const runWithRound = async (store: RunStore) => {
    const id = newId('run');
    const spec: RunSpec = {
      model: 'm',
      max_depth: 5,
      on_budget_exhausted: 'final_answer',
      metadata: {},
      ancestors: [],
      nesting: 0,
    };
    await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
    const { run } = (await store.transcript.loadStep(id, 0))!;
    await store.transcript.commitStep(run, step(['crm__t0', 'crm__t1']), {
      depth: 0,
      usage: step([]).usage,
      finish_reason: 'tool_calls',
      content: null,
      tool_calls: [],
    });
    /** Stores call `index`'s result, as its tool job does. */
    const complete = (index: number, output: string) => {
      const name = `crm__t${index}`;
      return store.toolCalls.complete(
        id,
        0,
        index,
        {
          id: `call_${index}`,
          name,
          status: 'completed',
          outcome: 'ok',
          output,
          is_error: false,
          attempts: 1,
          duration_ms: 1,
          started_at: now,
          completed_at: now,
        },
        { depth: 0, index, tool_call_id: `call_${index}`, name, is_error: false, duration_ms: 1, output },
        { count: 2, ancestors: [] },
      );
    };
    return { id, complete };
  };

  it('is not made before its round is complete: the attempt fails and is retried, asking the model nothing', async () => {
    llm = await startScriptedLlm({ handler: () => ({ content: 'done' }) });
    const store = new RunStore({ redis, prefix });
    const { id, complete } = await runWithRound(store);
    // Call 0 has its result, call 1 none: the round is not complete.
    expect((await complete(0, 'zero')).roundComplete).toBe(false);
    expect((await store.transcript.loadStep(id, 1))!.roundAppended).toBe(false);

    const deps = stepDeps(store, prefix);
    const data = { runId: id, depth: 1 };
    const job = new Job(deps.jobs.queue(QUEUES.agent), 'step', data, { attempts: 3 }, `${id}-1`);
    await expect(processAgentStep(data, { job }, deps)).rejects.toMatchObject({ code: 'round_incomplete' });
    expect(llm.requests).toHaveLength(0);
    // Its last result completes the round, with the tool messages in call order: the step then runs.
    expect((await complete(1, 'one')).roundComplete).toBe(true);
    expect(await processAgentStep(data, { job }, deps)).toEqual({ outcome: 'final_answer' });
    await deps.jobs.close();

    const tail = (await store.transcript.messages(id)).slice(2);
    expect(tail).toEqual([
      { role: 'tool', tool_call_id: 'call_0', content: 'zero' },
      { role: 'tool', tool_call_id: 'call_1', content: 'one' },
      { role: 'assistant', content: 'done' },
    ]);
    expect((await store.runs.get(id))!.status).toBe('completed');
  });

  it('ends at once, asking the model nothing, when it comes again after its round is done', async () => {
    // The job that completes a round adds the next step; a step job added twice or redelivered
    // late finds its own round's mark in the run.
    llm ??= await startScriptedLlm({ handler: () => ({ content: 'done' }) });
    const asked = llm.requests.length;
    const store = new RunStore({ redis, prefix });
    const { id, complete } = await runWithRound(store);
    const logger = createLogger({ service: 'test', level: 'silent' });
    const jobs = new JobQueues({ connection: queueRedis, prefix, logger });
    const runs = new Runs({ store, jobs, admission: new Admission(redis, prefix), logger });
    const openai = new OpenAI({ baseURL: llm.baseURL, apiKey: 'x', maxRetries: 0 });
    const tools = async () =>
      [0, 1].map((i) => ({ name: `crm__t${i}`, description: '', input_schema: { type: 'object' }, server: 'crm' }));
    const deps = {
      store,
      runs,
      jobs,
      actions: new RunActions({ store, jobs, runs, logger }),
      actionParkMs: 60_000,
      openai,
      logger,
      tools,
      modelTimeoutMs: 10_000,
      modelIdleTimeoutMs: 10_000,
    };
    const again = () =>
      processAgentStep(
        { runId: id, depth: 0 },
        { job: new Job(jobs.queue(QUEUES.agent), 'step', { runId: id, depth: 0 }, { attempts: 3 }, `${id}-t0`) },
        deps,
      );
    // Before the round is done, a redelivered step reuses its stored answer and fans it out again.
    expect(await again()).toEqual({ outcome: 'tool_calls', count: 2 });
    for (const index of [0, 1]) await complete(index, `r${index}`);
    expect(await again()).toEqual({ skipped: 'done before' });
    await jobs.close();
    expect(llm.requests.length).toBe(asked);
    expect((await store.transcript.messages(id)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
  });
});

describe('a step whose transcript is more than the worker may hold', () => {
  it('fails its run with transcript_too_large, asking the model nothing; one that fits waits for room and runs', async () => {
    llm ??= await startScriptedLlm({ handler: () => ({ content: 'done' }) });
    const asked = llm.requests.length;
    const prefix = `atl${randomBytes(3).toString('hex')}`;
    const store = new RunStore({ redis, prefix });
    const spec: RunSpec = {
      model: 'm',
      max_depth: 5,
      on_budget_exhausted: 'final_answer',
      metadata: {},
      ancestors: [],
      nesting: 0,
    };
    const inFlight = new TranscriptsInFlight(64 * 1024);
    const deps = stepDeps(store, prefix, { inFlight });
    const { jobs } = deps;
    const stepOf = async (content: string) => {
      const id = newId('run');
      await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content }] });
      return {
        id,
        step: () =>
          processAgentStep(
            { runId: id, depth: 0 },
            { job: new Job(jobs.queue(QUEUES.agent), 'step', { runId: id, depth: 0 }, { attempts: 3 }, `${id}-0`) },
            deps,
          ),
      };
    };

    const big = await stepOf('x'.repeat(100 * 1024));
    expect(await big.step()).toEqual({ failed: 'transcript_too_large' });
    const failed = (await store.runs.get(big.id))!;
    expect(failed).toMatchObject({ status: 'failed', stop_reason: 'error', error: { code: 'transcript_too_large' } });
    expect(failed.error!.message).toMatch(/0\.1 MB.*TRANSCRIPTS_IN_FLIGHT_MB=0\.1/);
    expect(llm.requests.length).toBe(asked);
    expect(inFlight.stats()).toEqual({ held: 0, waiting: 0 });

    // 40 KB fits, but not beside 30 KB held by another step: it waits until that is given back.
    const fits = await stepOf('y'.repeat(40 * 1024));
    const other = await inFlight.take(30 * 1024);
    const result = fits.step();
    await new Promise((r) => setTimeout(r, 100));
    expect(inFlight.stats().waiting).toBe(1);
    expect(llm.requests.length).toBe(asked);
    other.release();
    expect(await result).toEqual({ outcome: 'final_answer' });
    expect(llm.requests.length).toBe(asked + 1);
    expect(inFlight.stats()).toEqual({ held: 0, waiting: 0 });
    await jobs.close();
  });
});

describe("a run's first step, told its transcript's size by its job", () => {
  it('reads its input in one round trip (not its size first), and is still held to the bound when told too little', async () => {
    llm ??= await startScriptedLlm({ handler: () => ({ content: 'done' }) });
    const prefix = `ats${randomBytes(3).toString('hex')}`;
    const store = new RunStore({ redis, prefix });
    const spec: RunSpec = {
      model: 'm',
      max_depth: 5,
      on_budget_exhausted: 'final_answer',
      metadata: {},
      ancestors: [],
      nesting: 0,
    };
    const deps = stepDeps(store, prefix, { inFlight: new TranscriptsInFlight(64 * 1024) });
    const { jobs } = deps;
    // The API's way in: the run's first job carries the size its transcript was stored with.
    const created = await deps.runs.create(newId('run'), 'o', { spec, messages: [{ role: 'user', content: 'héllo' }] });
    const first = (await jobs.queue(QUEUES.agent).getJob(`${created.id}-t0`))!;
    const stored = await redis.hget(store.keys(created.id).run, 'transcript_bytes');
    expect(first.data.transcriptBytes).toBe(Number(stored));

    const step = (runId: string, transcriptBytes?: number) => {
      const data = { runId, depth: 0, ...(transcriptBytes !== undefined ? { transcriptBytes } : {}) };
      return processAgentStep(
        data,
        { job: new Job(jobs.queue(QUEUES.agent), 'step', data, { attempts: 3 }, `${runId}-0`) },
        deps,
      );
    };
    // What the connection sends and what comes back, in order: a step that reads its size first
    // sends its LRANGE only once the run's fields (HMGET) have come back (a second round trip).
    const seen: string[] = [];
    const send = redis.sendCommand.bind(redis);
    const sent = vi.spyOn(redis, 'sendCommand').mockImplementation((command, stream) => {
      const c = command as unknown as { name: string; promise: Promise<unknown> };
      seen.push(c.name);
      c.promise.then(
        () => seen.push(`${c.name} came back`),
        () => {},
      );
      return send(command, stream);
    });
    const lrangeBeforeReply = () => seen.indexOf('lrange') < seen.indexOf('hmget came back');
    try {
      const told = await store.runs.createSized({
        id: newId('run'),
        tenant: 'o',
        spec,
        messages: [{ role: 'user', content: 'hi' }],
      });
      seen.length = 0;
      expect(await step(told.run.id, told.transcriptBytes)).toEqual({ outcome: 'final_answer' });
      expect(seen).toContain('lrange');
      expect(lrangeBeforeReply()).toBe(true);
      const untold = await store.runs.create({
        id: newId('run'),
        tenant: 'o',
        spec,
        messages: [{ role: 'user', content: 'hi' }],
      });
      seen.length = 0;
      expect(await step(untold.id)).toEqual({ outcome: 'final_answer' });
      expect(seen).toContain('lrange');
      expect(lrangeBeforeReply()).toBe(false);
      // Told 10 bytes of a 100 KB transcript: read, found larger than the bound, and failed as ever.
      const big = await store.runs.create({
        id: newId('run'),
        tenant: 'o',
        spec,
        messages: [{ role: 'user', content: 'x'.repeat(100 * 1024) }],
      });
      expect(await step(big.id, 10)).toEqual({ failed: 'transcript_too_large' });
      expect(deps.inFlight!.stats()).toEqual({ held: 0, waiting: 0 });
    } finally {
      sent.mockRestore();
      await jobs.close();
    }
  });
});

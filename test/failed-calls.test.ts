import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { newId, type RunSpec } from '@agentq/shared/core';
import { createLogger } from '@agentq/shared/infra';
import { RunStore } from '@agentq/shared/store';
import {
  createJobWorker,
  JobQueues,
  QUEUES,
  toolCallJobId,
  type JobInput,
  type ToolCallsJob,
} from '@agentq/shared/jobs';
import { Admission, Runs } from '@agentq/shared/runs';
import { failedCalls, releaseNextStep } from '@agentq/tool-worker';
import { waitFor } from './fixtures/wait.js';

// A tool job that fails for good (its attempts spent, or stalled past BullMQ's limit) has error
// results stored for its calls that have none, which completes its round the one way a round
// completes: the next step is enqueued. The worker that failed it does it at once; should it die
// first (or the job fail without its processor), the tool-workers' sweep of failed jobs does.
const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
const prefix = `fc${randomBytes(3).toString('hex')}`;
const logger = createLogger({ service: 'test', level: 'silent' });
const jobs = new JobQueues({ connection: redis, prefix, logger });
const store = new RunStore({ redis, prefix });
const runs = new Runs({ store, jobs, admission: new Admission(redis, prefix), logger });
const release = (data: ToolCallsJob, o: { roundComplete: boolean }) => releaseNextStep({ store, runs, jobs }, data, o);
const sweeperWith = (over: Partial<Parameters<typeof failedCalls>[0]> = {}) =>
  failedCalls({ jobs, redis, store, logger, cells: [0], lookbackMs: 3600_000, release, ...over });
const failed = sweeperWith();
afterAll(async () => {
  await failed.close();
  await jobs.close();
  redis.disconnect();
});

const spec: RunSpec = {
  model: 'm',
  max_depth: 5,
  on_budget_exhausted: 'final_answer',
  metadata: {},
  ancestors: [],
  nesting: 0,
};
/** A run whose step at depth 2 is committed with two tool calls, neither answered. */
async function newRun(): Promise<string> {
  const id = newId('run');
  await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
  const { run } = (await store.transcript.loadStep(id, 2))!;
  const now = new Date().toISOString();
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  const tool_calls = [0, 1].map((i) => ({
    id: `call_${i}`,
    type: 'function' as const,
    function: { name: 'crm__a', arguments: '{}' },
  }));
  await store.transcript.commitStep(
    run,
    {
      depth: 2,
      status: 'completed',
      model: 'm',
      usage,
      started_at: now,
      completed_at: now,
      message: { role: 'assistant', content: null, tool_calls },
    },
    { depth: 2, usage, finish_reason: 'tool_calls', content: null, tool_calls: [] },
  );
  return id;
}
const round = (runId: string): JobInput<'toolCalls'> => ({
  runId,
  depth: 2,
  count: 2,
  calls: [0, 1].map((index) => ({ index, toolCallId: `call_${index}`, name: 'crm__a', arguments: '{}' })),
  nextStep: {},
});
const nextStepState = (runId: string) => jobs.queue(QUEUES.agent).getJobState(`${runId}-t3`);
const roundJobId = (runId: string) => toolCallJobId({ runId, depth: 2, index: 0 });
const toolMessages = async (runId: string) =>
  (await store.transcript.messages(runId)).filter((m) => m.role === 'tool').map((m) => m.content);

/** Adds a tool job that may be tried once and fails it without the worker's events, as a worker that dies right after does. */
async function failForGood(data: JobInput<'toolCalls'>): Promise<void> {
  await jobs.enqueue('toolCalls', data);
  await redis.hset(`${prefix}:{c0}:tool:${roundJobId(data.runId)}`, 'opts', JSON.stringify({ attempts: 1 }));
  const worker = new Worker('tool', null, { connection: redis.duplicate(), prefix: `${prefix}:{c0}` });
  try {
    const token = randomBytes(8).toString('hex');
    let job: Job | undefined;
    while (job?.id !== roundJobId(data.runId)) job = (await worker.getNextJob(token)) ?? undefined;
    await job.moveToFailed(new Error('job stalled more than allowable limit'), token);
  } finally {
    await worker.close();
  }
  expect(await jobs.queue(QUEUES.tool).getJobState(roundJobId(data.runId))).toBe('failed');
}

describe('a tool job that fails for good', () => {
  it('has its calls recorded as failed once its last attempt failed, and not on a failure that will be retried: the round completes and its step is enqueued', async () => {
    const id = await newRun();
    const seenAtAttempt: string[] = [];
    const worker = createJobWorker(
      'toolCalls',
      async (data, { job }) => {
        seenAtAttempt.push(`attempt ${job.attemptsMade + 1}: next step ${await nextStepState(data.runId)}`);
        throw new Error('tool server unreachable');
      },
      { connection: redis.duplicate({ maxRetriesPerRequest: null }), prefix, concurrency: 1, logger },
    );
    failed.watch(worker);
    try {
      await jobs
        .queue(QUEUES.tool)
        .add('round', { ...round(id), kind: 'toolCalls' }, { jobId: roundJobId(id), attempts: 2 });
      await waitFor(async () => (await nextStepState(id)) === 'waiting', {
        what: 'the next step after the last attempt failed',
      });
      expect(await jobs.queue(QUEUES.tool).getJobState(roundJobId(id))).toBe('failed');
      // The first failure was retried and recorded nothing: the second attempt found no step.
      expect(seenAtAttempt).toEqual(['attempt 1: next step unknown', 'attempt 2: next step unknown']);
      const messages = await toolMessages(id);
      expect(messages).toHaveLength(2);
      for (const m of messages)
        expect(m).toMatch(/^Error executing crm__a: the tool call failed and no result was recorded/);
      const steps = (await store.steps.list(id))[0]!.tool_calls;
      expect(steps.map((c) => c.outcome)).toEqual(['no_result', 'no_result']);
    } finally {
      await worker.close();
      // Ended, so that the sweeps of the tests below find nothing more to do for it.
      await store.runs.finishMany([id], { status: 'cancelled', stopReason: 'cancelled' });
    }
  });

  it('keeps a result stored before it failed: only its calls without one are recorded as failed', async () => {
    const id = await newRun();
    const now = new Date().toISOString();
    await store.toolCalls.complete(
      id,
      2,
      1,
      {
        id: 'call_1',
        name: 'crm__a',
        status: 'completed',
        outcome: 'ok',
        output: 'kept',
        is_error: false,
        attempts: 1,
        duration_ms: 1,
        started_at: now,
        completed_at: now,
      },
      { depth: 2, index: 1, tool_call_id: 'call_1', name: 'crm__a', is_error: false, duration_ms: 1, output: 'kept' },
      { count: 2, ancestors: [] },
    );
    await failForGood(round(id));
    await failed.sweep();
    expect(await nextStepState(id)).toBe('waiting');
    const messages = await toolMessages(id);
    expect(messages[0]).toMatch(/^Error executing crm__a/);
    expect(messages[1]).toBe('kept');
    await store.runs.finishMany([id], { status: 'cancelled', stopReason: 'cancelled' });
  });
  it('is found by the sweep when no worker handled it, once, and releases a step only while its run goes on', async () => {
    const stalled = await newRun();
    const ended = await newRun();
    const gone = newId('run');
    for (const runId of [stalled, ended, gone]) await failForGood(round(runId));
    await store.runs.finishMany([ended], { status: 'cancelled', stopReason: 'cancelled' });

    // The first try cannot store (Redis refuses): the next sweep tries again.
    const refusing = Object.create(store.toolCalls) as RunStore['toolCalls'];
    let refusals = 0;
    refusing.complete = async () => {
      refusals++;
      throw new Error('LOADING Redis is loading the dataset in memory');
    };
    const flakyStore = Object.create(store, { toolCalls: { value: refusing } }) as RunStore;
    const flaky = sweeperWith({ store: flakyStore });
    expect(await flaky.sweep()).toBe(0);
    expect(refusals).toBeGreaterThan(0);
    expect(await nextStepState(stalled)).toBe('unknown');
    (refusing as { complete: unknown }).complete = store.toolCalls.complete.bind(store.toolCalls);
    expect(await flaky.sweep()).toBe(1);
    expect(await nextStepState(stalled)).toBe('waiting');
    for (const runId of [ended, gone]) expect(await nextStepState(runId), runId).toBe('unknown');
    expect(await toolMessages(ended)).toEqual([]);

    // Once its step has run, a sweep adds nothing for it, here or on another worker.
    await jobs.queue(QUEUES.agent).remove(`${stalled}-t3`);
    await store.runs.finishMany([stalled], { status: 'completed', stopReason: 'stop' });
    await sweeperWith().sweep();
    expect(await nextStepState(stalled)).toBe('unknown');
  });

  it('pages through many jobs that failed in the same millisecond, and past them', async () => {
    const runs = await Promise.all(Array.from({ length: 6 }, newRun));
    for (const runId of runs) await failForGood(round(runId));
    // Five failed at one time (more than a page), the sixth a millisecond after.
    const failedKey = jobs.queue(QUEUES.tool).keys.failed;
    const at = Date.now() - 1000;
    for (const [i, runId] of runs.entries()) await redis.zadd(failedKey, 'XX', i < 5 ? at : at + 1, roundJobId(runId));
    const sweeper = sweeperWith({ lookbackMs: 60_000, pageSize: 2 });
    expect(await sweeper.sweep()).toBe(6);
    for (const runId of runs) expect(await nextStepState(runId), runId).toBe('waiting');
    expect(await sweeper.sweep()).toBe(0);
  });

  it("misses none of a millisecond's jobs when one it has read leaves the failed set between two pages", async () => {
    const failedKey = jobs.queue(QUEUES.tool).keys.failed;
    await redis.del(failedKey); // the earlier tests' jobs: these alone make the pages
    const runs = await Promise.all(Array.from({ length: 5 }, newRun));
    for (const runId of runs) await failForGood(round(runId));
    const at = Date.now() - 1000;
    for (const runId of runs) await redis.zadd(failedKey, 'XX', at, roundJobId(runId));
    // The first of them the sweep looks at is retried (it leaves the failed set) while the sweep reads on.
    const leaving = Object.create(jobs) as JobQueues;
    leaving.queue = ((name: string, cell?: number) => {
      const queue = jobs.queue(name as typeof QUEUES.tool, cell);
      return Object.assign(Object.create(queue), {
        getJob: async (id: string) => {
          if (id === roundJobId(runs[0]!)) await redis.zrem(failedKey, id);
          return queue.getJob(id);
        },
      });
    }) as JobQueues['queue'];
    const sweeper = sweeperWith({ jobs: leaving, lookbackMs: 60_000, pageSize: 2 });
    await sweeper.sweep();
    for (const runId of runs) expect(await nextStepState(runId), runId).toBe('waiting');
  });
});

import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import {
  createJobWorker,
  createLogger,
  JobQueues,
  newId,
  QUEUES,
  RunStore,
  type RunSpec,
  type ToolRoundJob,
} from '@agentq/shared';
import { NextSteps } from '@agentq/tool-worker';
import { waitFor } from './fixtures/wait.js';

// A round that is one job adds its run's next step itself (no flow parent releases it): after its
// calls, once it has failed for good, and, should the worker that failed it die first (or the job
// fail without its processor, stalled past BullMQ's limit), by the tool-workers' sweep.
const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
const prefix = `nxt${randomBytes(3).toString('hex')}`;
const logger = createLogger({ service: 'test', level: 'silent' });
const jobs = new JobQueues({ connection: redis, prefix, logger });
const store = new RunStore({ redis, prefix });
const nextSteps = new NextSteps({ jobs, redis, store, logger, cells: [0], lookbackMs: 3600_000 });
afterAll(async () => {
  await nextSteps.close();
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
async function newRun(): Promise<string> {
  const id = newId('run');
  await store.runs.create({ id, owner: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
  return id;
}
const round = (runId: string, nextStep?: object): ToolRoundJob => ({
  runId,
  depth: 2,
  count: 2,
  calls: [0, 1].map((index) => ({ index, toolCallId: `call_${index}`, name: 'crm__a', arguments: '{}' })),
  ...(nextStep ? { nextStep } : {}),
});
const nextStepState = (runId: string) => jobs.queue(QUEUES.agent).getJobState(`${runId}-t3`);
const roundJobId = (runId: string) => `${runId}-t2-r`;

/** Adds a round job that may be tried once and fails it without the worker's events, as a worker that dies right after does. */
async function failForGood(data: ToolRoundJob): Promise<void> {
  await jobs.enqueue('toolRound', data);
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

describe('a round job that adds the next step', () => {
  it('adds it after its calls, and adds nothing when it is not that kind of job', async () => {
    const id = newId('run');
    const order: string[] = [];
    const handler = nextSteps.wrap(async (data: ToolRoundJob) => {
      order.push(`calls, next step ${await nextStepState(data.runId)}`);
      return 'done';
    });
    expect(
      await handler(round(id, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }), {}),
    ).toBe('done');
    expect(order).toEqual(['calls, next step unknown']);
    const step = await jobs.queue(QUEUES.agent).getJob(`${id}-t3`);
    expect(step?.data).toEqual({
      runId: id,
      depth: 3,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });

    const inFlow = newId('run');
    await handler(round(inFlow), {});
    expect(await nextStepState(inFlow)).toBe('unknown');
  });

  it('adds it once the job has failed for good, and not on a failure that will be retried', async () => {
    const id = await newRun();
    const seenAtAttempt: string[] = [];
    const worker = createJobWorker(
      'toolRound',
      nextSteps.wrap(async (data: ToolRoundJob, { job }) => {
        seenAtAttempt.push(`attempt ${job.attemptsMade + 1}: next step ${await nextStepState(data.runId)}`);
        throw new Error('tool server unreachable');
      }),
      { connection: redis.duplicate({ maxRetriesPerRequest: null }), prefix, concurrency: 1, logger },
    );
    nextSteps.watch(worker);
    try {
      await jobs.queue(QUEUES.tool).add('round', round(id, {}), { jobId: roundJobId(id), attempts: 2 });
      await waitFor(async () => (await nextStepState(id)) === 'waiting', {
        what: 'the next step after the last attempt failed',
      });
      expect(await jobs.queue(QUEUES.tool).getJobState(roundJobId(id))).toBe('failed');
      // The first failure was retried and added nothing: the second attempt found no step.
      expect(seenAtAttempt).toEqual(['attempt 1: next step unknown', 'attempt 2: next step unknown']);
    } finally {
      await worker.close();
      // Ended, so that the sweeps of the tests below find nothing more to add for it.
      await store.runs.finishMany([id], { status: 'cancelled', stopReason: 'cancelled' });
    }
  });

  it('is found by the sweep when no worker added its step, once, and only while its run needs it', async () => {
    const stalled = await newRun();
    const inFlow = await newRun();
    const ended = await newRun();
    const gone = newId('run');
    for (const [runId, nextStep] of [
      [stalled, {}],
      [inFlow, undefined],
      [ended, {}],
      [gone, {}],
    ] as const)
      await failForGood(round(runId, nextStep));
    await store.runs.finishMany([ended], { status: 'cancelled', stopReason: 'cancelled' });

    // The first try cannot add it (Redis refuses): the next sweep tries again.
    const refusing = Object.create(jobs) as JobQueues;
    let refusals = 0;
    refusing.enqueue = async () => {
      refusals++;
      throw new Error('LOADING Redis is loading the dataset in memory');
    };
    const flaky = new NextSteps({ jobs: refusing, redis, store, logger, cells: [0], lookbackMs: 3600_000 });
    expect(await flaky.sweep()).toBe(0);
    expect(refusals).toBe(1);
    expect(await nextStepState(stalled)).toBe('unknown');
    (refusing as { enqueue: unknown }).enqueue = jobs.enqueue.bind(jobs);
    expect(await flaky.sweep()).toBe(1);
    expect(await nextStepState(stalled)).toBe('waiting');
    for (const runId of [inFlow, ended, gone]) expect(await nextStepState(runId), runId).toBe('unknown');

    // Once its step has run (it appends the round), a sweep adds nothing for it, here or on another worker.
    const run = (await store.transcript.loadStep(stalled, 3))!.run;
    // (Its step at depth 2 was committed: tool messages follow the assistant message that asked for them.)
    const now = new Date().toISOString();
    const tool_calls = [0, 1].map((i) => ({
      id: `call_${i}`,
      type: 'function' as const,
      function: { name: 'crm__a', arguments: '{}' },
    }));
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
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
    expect(
      await store.transcript.appendRound(
        run,
        2,
        [0, 1].map((i) => ({ role: 'tool' as const, tool_call_id: `call_${i}`, content: 'no result' })),
      ),
    ).toBe(true);
    await jobs.queue(QUEUES.agent).remove(`${stalled}-t3`);
    expect(await nextSteps.sweep()).toBe(0);
    expect(await nextStepState(stalled)).toBe('unknown');
  });

  it('pages through many jobs that failed in the same millisecond, and past them', async () => {
    const runs = await Promise.all(Array.from({ length: 6 }, newRun));
    for (const runId of runs) await failForGood(round(runId, {}));
    // Five failed at one time (more than a page), the sixth a millisecond after.
    const failedKey = jobs.queue(QUEUES.tool).keys.failed;
    const at = Date.now() - 1000;
    for (const [i, runId] of runs.entries()) await redis.zadd(failedKey, 'XX', i < 5 ? at : at + 1, roundJobId(runId));
    const sweeper = new NextSteps({ jobs, redis, store, logger, cells: [0], lookbackMs: 60_000, pageSize: 2 });
    expect(await sweeper.sweep()).toBe(6);
    for (const runId of runs) expect(await nextStepState(runId), runId).toBe('waiting');
    expect(await sweeper.sweep()).toBe(0);
  });

  it("misses none of a millisecond's jobs when one it has read leaves the failed set between two pages", async () => {
    const failedKey = jobs.queue(QUEUES.tool).keys.failed;
    await redis.del(failedKey); // the earlier tests' jobs: these alone make the pages
    const runs = await Promise.all(Array.from({ length: 5 }, newRun));
    for (const runId of runs) await failForGood(round(runId, {}));
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
    const sweeper = new NextSteps({ jobs: leaving, redis, store, logger, cells: [0], lookbackMs: 60_000, pageSize: 2 });
    await sweeper.sweep();
    for (const runId of runs) expect(await nextStepState(runId), runId).toBe('waiting');
  });
});

import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createLogger, JobQueues, newId, QUEUES, type JobContext, type ToolRoundJob } from '@agentq/shared';
import { NextSteps } from '@agentq/tool-worker';

// A round that is one job adds its run's next step itself (no flow parent releases it): after its
// calls, before it fails for good, and, when it failed without its processor (stalled past
// BullMQ's limit), by the tool-workers' sweep of failed jobs.
const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
const prefix = `nxt${randomBytes(3).toString('hex')}`;
const logger = createLogger({ service: 'test', level: 'silent' });
const jobs = new JobQueues({ connection: redis, prefix, logger });
const nextSteps = new NextSteps({ jobs, redis, logger, cells: [0], lookbackMs: 3600_000 });
afterAll(async () => {
  await nextSteps.close();
  await jobs.close();
  redis.disconnect();
});

const round = (runId: string, nextStep?: object): ToolRoundJob => ({
  runId,
  depth: 2,
  count: 2,
  calls: [0, 1].map((index) => ({ index, toolCallId: `call_${index}`, name: 'crm__a', arguments: '{}' })),
  ...(nextStep ? { nextStep } : {}),
});
const nextStepState = (runId: string) => jobs.queue(QUEUES.agent).getJobState(`${runId}-t3`);

/** Adds a round job that may be tried once and fails it, as a worker whose job stalled past the limit does. */
async function failForGood(data: ToolRoundJob): Promise<void> {
  await jobs.enqueue('toolRound', data);
  await redis.hset(`${prefix}:{c0}:tool:${data.runId}-t2-r`, 'opts', JSON.stringify({ attempts: 1 }));
  const worker = new Worker(`tool`, null, { connection: redis.duplicate(), prefix: `${prefix}:{c0}` });
  try {
    const token = randomBytes(8).toString('hex');
    let job: Job | undefined;
    while (!job || job.id !== `${data.runId}-t2-r`) job = (await worker.getNextJob(token)) ?? undefined;
    await job.moveToFailed(new Error('job stalled more than allowable limit'), token);
  } finally {
    await worker.close();
  }
  expect(await jobs.queue(QUEUES.tool).getJobState(`${data.runId}-t2-r`)).toBe('failed');
}

const ctx = (attemptsMade: number): JobContext => ({ job: { attemptsMade, opts: { attempts: 4 } } as Job });

describe('a round job that adds the next step', () => {
  it('adds it after its calls, and adds nothing when it is not that kind of job', async () => {
    const id = newId('run');
    const order: string[] = [];
    const handler = nextSteps.wrap(async (data: ToolRoundJob) => {
      order.push(`calls, next step ${await nextStepState(data.runId)}`);
      return 'done';
    });
    expect(await handler(round(id, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }), ctx(0))).toBe('done');
    expect(order).toEqual(['calls, next step unknown']);
    const step = await jobs.queue(QUEUES.agent).getJob(`${id}-t3`);
    expect(step?.data).toEqual({ runId: id, depth: 3, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });

    const inFlow = newId('run');
    await handler(round(inFlow), ctx(0));
    expect(await nextStepState(inFlow)).toBe('unknown');
  });

  it('adds it before failing for good, and not on a failure that will be retried', async () => {
    const failing = nextSteps.wrap(async () => {
      throw new Error('tool server unreachable');
    });
    const retried = newId('run');
    await expect(failing(round(retried, {}), ctx(2))).rejects.toThrow('unreachable');
    expect(await nextStepState(retried)).toBe('unknown');
    const last = newId('run');
    await expect(failing(round(last, {}), ctx(3))).rejects.toThrow('unreachable');
    expect(await nextStepState(last)).toBe('waiting');
  });

  it('is found by the sweep when it failed without its processor, once, and only if it adds the next step', async () => {
    const stalled = newId('run');
    const inFlow = newId('run');
    await failForGood(round(stalled, {}));
    await failForGood(round(inFlow));
    expect(await nextStepState(stalled)).toBe('unknown');

    expect(await nextSteps.sweep()).toBe(1);
    expect(await nextStepState(stalled)).toBe('waiting');
    expect(await nextStepState(inFlow)).toBe('unknown');
    // The next sweep's window overlaps this one's: the job is not taken again.
    await jobs.queue(QUEUES.agent).remove(`${stalled}-t3`);
    expect(await nextSteps.sweep()).toBe(0);
    expect(await nextStepState(stalled)).toBe('unknown');
  });
});

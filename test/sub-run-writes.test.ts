import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { childRunId, newId, type RunSpec } from '@agentq/shared/core';
import { createLogger, createRedis, waitForReady } from '@agentq/shared/infra';
import { RunStore } from '@agentq/shared/store';
import { JobQueues, QUEUES } from '@agentq/shared/jobs';
import { Admission, Runs } from '@agentq/shared/runs';

// Runs on one Redis and (cluster project) on a Redis Cluster, whose run writes take another path.
const redis = createRedis(inject('redisUrl'), { name: 'sub-run-writes-test' });
afterAll(() => redis.disconnect());

const spec: RunSpec = {
  model: 'm',
  max_depth: 3,
  on_budget_exhausted: 'final_answer',
  metadata: {},
  ancestors: [],
  nesting: 0,
};

/** A root run whose agent_query call (its tool job) starts one sub-run: what each delivery of that job has. */
async function agentQueryCall() {
  expect(await waitForReady(redis)).toBe(true);
  const prefix = `sw${randomBytes(3).toString('hex')}`;
  const logger = createLogger({ service: 'test', level: 'silent' });
  const store = new RunStore({ redis, prefix });
  const jobs = new JobQueues({ connection: redis, prefix, cells: 1, logger });
  const runs = new Runs({ store, jobs, admission: new Admission(redis, prefix), logger });
  const parentId = newId('run');
  await store.runs.create({ id: parentId, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
  const parent = (await store.runs.getState(parentId))!;
  await jobs.enqueue('toolCalls', {
    runId: parentId,
    depth: 0,
    count: 1,
    calls: [{ index: 0, toolCallId: 'call_0', name: 'agent_query', arguments: '{}' }],
    nextStep: {},
  });
  const toolJob = (await jobs.queue(QUEUES.tool, 0).getJob(`${parentId}-t0-c0`))!;
  const origin = { depth: 0, index: 0, toolCallId: 'call_0' };
  const child = {
    id: childRunId(parentId, `${toolJob.id}:0`, toolJob.timestamp),
    messages: [{ role: 'user' as const, content: 'the sub-task' }],
    index: 0,
  };
  /** One delivery of the job making its sub-run. */
  const deliver = () => runs.createChild(parent, child, origin);
  return { store, runs, parent, child, deliver, close: () => jobs.close() };
}

describe('a sub-run', () => {
  it(
    'written by two deliveries of its agent_query job at once is written once: ' +
      'its transcript holds its prompt once, its record is not written over',
    async () => {
      const { store, runs, parent, child, deliver, close } = await agentQueryCall();
      try {
        await Promise.all([deliver(), deliver()]);
        expect(await redis.lrange(store.keys(child.id).messages, 0, -1)).toEqual([JSON.stringify(child.messages[0])]);
        expect((await store.runs.children(parent.id)).map((r) => r.id)).toEqual([child.id]);
        const queued = (await redis.xrange(store.keys(child.id).events, '-', '+')).filter(
          ([, f]) => f[1] === 'run.queued',
        );
        expect(queued).toHaveLength(1);

        // A delivery that comes once the sub-run is under way leaves it as it is.
        expect(await runs.start(child.id)).toBe(true);
        await deliver();
        expect((await store.runs.getState(child.id))!.status).toBe('running');
        expect(await redis.llen(store.keys(child.id).messages)).toBe(1);
      } finally {
        await close();
      }
    },
  );

  it(
    'written by a delivery that died before listing it is listed ' +
      'under its parent, and announced once, by the next delivery',
    async () => {
      const { store, parent, child, deliver, close } = await agentQueryCall();
      try {
        // The first delivery wrote the sub-run and died before listing it.
        await store.runs.createSized({
          id: child.id,
          tenant: 'o',
          spec: { ...spec, ancestors: [parent.id], nesting: 1 },
          messages: child.messages,
          parentRunId: parent.id,
          rootRunId: parent.id,
        });
        expect((await store.runs.children(parent.id)).map((r) => r.id)).toEqual([]);
        await deliver();
        await deliver();
        expect((await store.runs.children(parent.id)).map((r) => r.id)).toEqual([child.id]);
        const started = (await redis.xrange(store.keys(parent.id).events, '-', '+')).filter(
          ([, f]) => f[1] === 'subrun.started',
        );
        expect(started).toHaveLength(1);
      } finally {
        await close();
      }
    },
  );
});

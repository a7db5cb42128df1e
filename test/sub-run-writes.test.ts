import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Admission, childRunId, createLogger, createRedis, JobQueues, newId, QUEUES, Runs, RunStore, waitForReady, type RunSpec } from '@agentq/shared';

// Runs on one Redis and (cluster project) on a Redis Cluster, whose run writes take another path.
const redis = createRedis(inject('redisUrl'), { name: 'sub-run-writes-test' });
afterAll(() => redis.disconnect());

const spec: RunSpec = { model: 'm', max_depth: 3, on_budget_exhausted: 'final_answer', metadata: {}, ancestors: [], nesting: 0 };

describe('a sub-run', () => {
  it('written by two deliveries of its agent_query job at once is written once: its transcript holds its prompt once, its record is not written over', async () => {
    expect(await waitForReady(redis)).toBe(true);
    const prefix = `sw${randomBytes(3).toString('hex')}`;
    const logger = createLogger({ service: 'test', level: 'silent' });
    const store = new RunStore({ redis, prefix });
    const jobs = new JobQueues({ connection: redis, prefix, cells: 1, logger });
    const runs = new Runs({ store, jobs, admission: new Admission(redis, prefix), logger });
    try {
      const parentId = newId('run');
      await store.runs.create({ id: parentId, owner: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
      const parent = (await store.runs.getState(parentId))!;
      await jobs.enqueue('toolCall', { runId: parentId, depth: 0, index: 0, toolCallId: 'call_0', name: 'agent_query', arguments: '{}' });
      const toolJob = (await jobs.queue(QUEUES.tool, 0).getJob(`${parentId}-t0-c0`))!;
      const origin = { job: { id: toolJob.id!, queue: toolJob.queueQualifiedName }, depth: 0, toolCallId: 'call_0' };
      const child = { id: childRunId(parentId, `${toolJob.id}:0`, toolJob.timestamp), messages: [{ role: 'user' as const, content: 'the sub-task' }], index: 0 };

      await Promise.all([runs.createChild(parent, child, origin), runs.createChild(parent, child, origin)]);
      expect(await redis.lrange(store.keys(child.id).messages, 0, -1)).toEqual([JSON.stringify(child.messages[0])]);
      expect((await store.runs.children(parentId)).map((r) => r.id)).toEqual([child.id]);
      const queued = (await redis.xrange(store.keys(child.id).events, '-', '+')).filter(([, f]) => f[1] === 'run.queued');
      expect(queued).toHaveLength(1);

      // A delivery that comes once the sub-run is under way leaves it as it is.
      expect(await runs.start(child.id)).toBe(true);
      await runs.createChild(parent, child, origin);
      expect((await store.runs.getState(child.id))!.status).toBe('running');
      expect(await redis.llen(store.keys(child.id).messages)).toBe(1);
    } finally {
      await jobs.close();
    }
  });
});

import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { newId, type RunSpec } from '@agentq/shared/core';
import { createLogger } from '@agentq/shared/infra';
import { RunStore } from '@agentq/shared/store';
import { toolCallJobId, JobQueues, QUEUES } from '@agentq/shared/jobs';
import { Admission, RunActions, Runs } from '@agentq/shared/runs';
import { fanOut } from '@agentq/agent-worker';

// A round's requests are stored (and can be answered) before its jobs are added. An answer in
// between finds no job to wake: the fan-out wakes it once the job exists, or it would sleep
// until its request expires (for a request without expiry: ACTION_PARK_MAX_MS, 30 days).

const redis = new Redis(inject('redisUrl'));
const prefix = `early${randomBytes(3).toString('hex')}`;
const logger = createLogger({ service: 'test', level: 'silent' });
const store = new RunStore({ redis, prefix });
const jobs = new JobQueues({ connection: redis, prefix, logger });
afterAll(async () => {
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
  approval: { tools: ['crm__*'], destructive: false, on_timeout: 'reject' },
};

describe('an answer that comes before its job exists', () => {
  it('still wakes the job: the fan-out promotes it once it is added', async () => {
    const id = newId('run');
    await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
    await store.runs.start(id);
    const run = (await store.runs.getState(id))!;
    const actions = new RunActions({
      store,
      jobs,
      runs: new Runs({ store, jobs, admission: new Admission(redis, prefix), logger }),
      logger,
    });
    // Answers each request the moment it is stored, before fanOut goes on to add the jobs.
    const answerAtOnce = Object.assign(Object.create(actions) as RunActions, {
      require: async (r: typeof run, records: Parameters<RunActions['require']>[1]) => {
        await actions.require(r, records);
        for (const rec of records)
          expect(
            (await actions.decide(r, rec.id, { decision: 'approved', by: 'test', at: new Date().toISOString() })).kind,
          ).toBe('ok');
      },
    });
    const calls = [0, 1].map((i) => ({
      id: `call_${i}`,
      type: 'function' as const,
      function: { name: i === 0 ? 'crm__update_contact' : 'crm__search_contacts', arguments: '{}' },
    }));
    await fanOut({ jobs, actions: answerAtOnce, catalog: [], parkMs: 60_000 }, run, 0, calls);
    const state = (index: number) => jobs.queue(QUEUES.tool).getJobState(toolCallJobId({ runId: id, depth: 0, index }));
    // The answered call is ready to run now, like the call that needed nothing.
    expect(await state(0)).toBe('waiting');
    expect(await state(1)).toBe('waiting');
  });
});

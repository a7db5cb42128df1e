import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { newId, type RunSpec, type ToolCall } from '@agentq/shared/core';
import { createLogger } from '@agentq/shared/infra';
import { RunStore } from '@agentq/shared/store';
import { JobQueues, QUEUES } from '@agentq/shared/jobs';
import { RunActions, Runs, Admission } from '@agentq/shared/runs';
import { fanOut } from '@agentq/agent-worker';

// Which jobs a round becomes: the calls that only run share one job; a sub-agent call and a call
// that waits for an answer get a job of their own.
const redis = new Redis(inject('redisUrl'), { maxRetriesPerRequest: null });
const prefix = `fan${randomBytes(3).toString('hex')}`;
const logger = createLogger({ service: 'test', level: 'silent' });
const store = new RunStore({ redis, prefix });
const jobs = new JobQueues({ connection: redis, prefix, logger });
const runs = new Runs({ store, jobs, admission: new Admission(redis, prefix), logger });
const actions = new RunActions({ store, jobs, runs, logger });
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
};
const calls = (names: string[]): ToolCall[] =>
  names.map((name, i) => ({ id: `call_${i}`, type: 'function', function: { name, arguments: `{"i":${i}}` } }));

/** Fans a round out for a new run; returns the tool jobs added (by id suffix) and the state of the next step's job. */
async function fanOutRound(names: string[], transcriptBytes?: number) {
  const id = newId('run');
  await store.runs.create({ id, tenant: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
  const { run } = (await store.transcript.loadStep(id, 0))!;
  await fanOut({ jobs, actions, catalog: [], parkMs: 60_000 }, run, 0, calls(names), transcriptBytes);
  const added = (await jobs.queue(QUEUES.tool).getJobs(['waiting', 'active', 'delayed'])).filter(
    (j) => j.data.runId === id,
  );
  const data = Object.fromEntries(added.map((j) => [j.id!.slice(id.length), j.data]));
  return { id, ids: Object.keys(data).sort(), data, next: await jobs.queue(QUEUES.agent).getJobState(`${id}-t1`) };
}

describe('fanOut', () => {
  it("puts a round's calls that only run in one job, beside a sub-agent call's own job; no step waits", async () => {
    const { ids, data, next } = await fanOutRound(['crm__a', 'agent_query', 'crm__b', 'crm__c']);
    expect(ids).toEqual(['-t0-c0', '-t0-c1']);
    expect(data['-t0-c0'].calls).toEqual([
      { index: 0, toolCallId: 'call_0', name: 'crm__a', arguments: '{"i":0}' },
      { index: 2, toolCallId: 'call_2', name: 'crm__b', arguments: '{"i":2}' },
      { index: 3, toolCallId: 'call_3', name: 'crm__c', arguments: '{"i":3}' },
    ]);
    expect(data['-t0-c1'].calls.map((c: { name: string }) => c.name)).toEqual(['agent_query']);
    // Both know the round's size; whichever stores its last result enqueues the step, which does
    // not exist before. A round that starts sub-runs gives the run's slot back when it completes.
    expect([data['-t0-c0'].count, data['-t0-c1'].count]).toEqual([4, 4]);
    expect([data['-t0-c0'].kind, data['-t0-c1'].kind]).toEqual(['toolCalls', 'toolCalls']);
    expect(data['-t0-c0'].nextStep).toEqual({ resumes: true });
    expect(next).toBe('unknown');
  });

  it('gives a round of calls that only run one job, whose next step neither exists nor resumes anything', async () => {
    const two = await fanOutRound(['crm__a', 'crm__b']);
    expect(two.ids).toEqual(['-t0-c0']);
    expect(two.data['-t0-c0'].nextStep).toEqual({});
    expect(two.next).toBe('unknown');
    expect((await fanOutRound(['crm__a'])).ids).toEqual(['-t0-c0']);
  });

  it("tells the next step the transcript's size, through every job of the round", async () => {
    const round = await fanOutRound(['crm__a', 'agent_query'], 1234);
    expect(Object.values(round.data).map((d) => d.nextStep)).toEqual([
      { transcriptBytes: 1234, resumes: true },
      { transcriptBytes: 1234, resumes: true },
    ]);
  });
});

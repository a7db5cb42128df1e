import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { createLogger, JobQueues, newId, QUEUES, RunActions, Runs, RunStore, Admission, type RunSpec, type ToolCall } from '@agentq/shared';
import { fanOut } from '@agentq/agent-worker';

// Which jobs a round becomes: the calls that only run share one tool-round job (unless
// TOOL_ROUND_JOBS is off); a sub-agent call and a round of one call get a job of their own.
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

const spec: RunSpec = { model: 'm', max_depth: 5, on_budget_exhausted: 'final_answer', metadata: {}, ancestors: [], nesting: 0 };
const calls = (names: string[]): ToolCall[] => names.map((name, i) => ({ id: `call_${i}`, type: 'function', function: { name, arguments: `{"i":${i}}` } }));

/** Fans a round out for a new run; returns the ids of the tool jobs added, and the round job's data. */
async function fanOutRound(names: string[], roundJobs: boolean) {
  const id = newId('run');
  await store.runs.create({ id, owner: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
  const { run } = (await store.transcript.loadStep(id, 0))!;
  await fanOut({ jobs, actions, catalog: [], parkMs: 60_000, roundJobs }, run, 0, calls(names));
  const added = (await jobs.queue(QUEUES.tool).getJobs(['waiting', 'active', 'delayed'])).filter((j) => j.data.runId === id);
  const round = added.find((j) => j.id === `${id}-t0-r`);
  return { id, ids: added.map((j) => j.id!.slice(id.length)).sort(), round: round?.data, next: await jobs.queue(QUEUES.agent).getJobState(`${id}-t1`) };
}

describe('fanOut', () => {
  it("puts a round's calls that only run in one job, beside a sub-agent call's own job, all children of the next step", async () => {
    const { ids, round, next } = await fanOutRound(['crm__a', 'agent_query', 'crm__b', 'crm__c'], true);
    expect(ids).toEqual(['-t0-c1', '-t0-r']);
    expect(round.calls).toEqual([
      { index: 0, toolCallId: 'call_0', name: 'crm__a', arguments: '{"i":0}' },
      { index: 2, toolCallId: 'call_2', name: 'crm__b', arguments: '{"i":2}' },
      { index: 3, toolCallId: 'call_3', name: 'crm__c', arguments: '{"i":3}' },
    ]);
    expect(round.count).toBe(4);
    expect(next).toBe('waiting-children');
  });

  it('gives a round of one call a job of its own', async () => {
    expect((await fanOutRound(['crm__a'], true)).ids).toEqual(['-t0-c0']);
    // One call beside a sub-agent call: nothing to share a job with.
    expect((await fanOutRound(['crm__a', 'agent_query'], true)).ids).toEqual(['-t0-c0', '-t0-c1']);
  });

  it('with TOOL_ROUND_JOBS off, gives every call a job of its own', async () => {
    const { ids, round } = await fanOutRound(['crm__a', 'crm__b', 'crm__c'], false);
    expect(ids).toEqual(['-t0-c0', '-t0-c1', '-t0-c2']);
    expect(round).toBeUndefined();
  });
});

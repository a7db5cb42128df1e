import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  createLogger,
  JobQueues,
  newId,
  QUEUES,
  RunActions,
  Runs,
  RunStore,
  Admission,
  type RunSpec,
  type ToolCall,
} from '@agentq/shared';
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

/** Fans a round out for a new run; returns the ids of the tool jobs added, their data, and the state of the next step's job. */
async function fanOutRound(
  names: string[],
  roundJobs: boolean,
  specOf: (s: RunSpec) => RunSpec = (s) => s,
  transcriptBytes?: number,
) {
  const id = newId('run');
  await store.runs.create({ id, owner: 'o', spec: specOf(spec), messages: [{ role: 'user', content: 'hi' }] });
  const { run } = (await store.transcript.loadStep(id, 0))!;
  await fanOut({ jobs, actions, catalog: [], parkMs: 60_000, roundJobs }, run, 0, calls(names), transcriptBytes);
  const added = (await jobs.queue(QUEUES.tool).getJobs(['waiting', 'active', 'delayed'])).filter(
    (j) => j.data.runId === id,
  );
  const data = Object.fromEntries(added.map((j) => [j.id!.slice(id.length), j.data]));
  return {
    id,
    ids: Object.keys(data).sort(),
    data,
    round: data['-t0-r'],
    next: await jobs.queue(QUEUES.agent).getJobState(`${id}-t1`),
  };
}

describe('fanOut', () => {
  it("puts a round's calls that only run in one job, beside a sub-agent call's own job, all children of the next step", async () => {
    const { ids, round, data, next } = await fanOutRound(['crm__a', 'agent_query', 'crm__b', 'crm__c'], true);
    expect(ids).toEqual(['-t0-c1', '-t0-r']);
    expect(round.calls).toEqual([
      { index: 0, toolCallId: 'call_0', name: 'crm__a', arguments: '{"i":0}' },
      { index: 2, toolCallId: 'call_2', name: 'crm__b', arguments: '{"i":2}' },
      { index: 3, toolCallId: 'call_3', name: 'crm__c', arguments: '{"i":3}' },
    ]);
    expect(round.count).toBe(4);
    // Two jobs: a flow's parent waits for both; neither adds the step.
    expect(next).toBe('waiting-children');
    expect([round.nextStep, data['-t0-c1'].nextStep]).toEqual([undefined, undefined]);
  });

  it('adds a round that is one job alone: that job adds the next step itself, so there is no flow parent', async () => {
    const { ids, round, next } = await fanOutRound(['crm__a', 'crm__b'], true);
    expect(ids).toEqual(['-t0-r']);
    expect(round.nextStep).toEqual({});
    expect(next).toBe('unknown');
  });

  it('gives a round of one call a job of its own, which adds the next step unless it waits on sub-runs', async () => {
    const lone = await fanOutRound(['crm__a'], true);
    expect(lone.ids).toEqual(['-t0-c0']);
    expect(lone.data['-t0-c0'].nextStep).toEqual({});
    expect(lone.next).toBe('unknown');
    // One call beside a sub-agent call: nothing to share a job with.
    expect((await fanOutRound(['crm__a', 'agent_query'], true)).ids).toEqual(['-t0-c0', '-t0-c1']);
    // A sub-agent call alone: its job waits for its sub-runs, so a flow's parent waits for it.
    const subagent = await fanOutRound(['agent_query'], true);
    expect([subagent.data['-t0-c0'].nextStep, subagent.next]).toEqual([undefined, 'waiting-children']);
  });

  it("tells the next step the transcript's size, whichever adds it: the round's job, or the flow", async () => {
    const lone = await fanOutRound(['crm__a', 'crm__b'], true, undefined, 1234);
    expect(lone.round.nextStep).toEqual({ transcriptBytes: 1234 });
    const flow = await fanOutRound(['crm__a', 'agent_query'], true, undefined, 1234);
    expect((await jobs.queue(QUEUES.agent).getJob(`${flow.id}-t1`))!.data).toMatchObject({
      runId: flow.id,
      depth: 1,
      transcriptBytes: 1234,
    });
  });

  it("keeps a sub-run's round in a flow: its steps are children of the job that started it", async () => {
    const parent = await jobs
      .queue(QUEUES.tool)
      .add('parent', { runId: 'p' }, { jobId: `parent-${randomBytes(3).toString('hex')}` });
    const sub = await fanOutRound(['crm__a', 'crm__b'], true, (s) => ({
      ...s,
      parent_job: { id: parent.id!, queue: parent.queueQualifiedName },
    }));
    expect(sub.round.nextStep).toBeUndefined();
    expect(sub.next).toBe('waiting-children');
  });

  it('with TOOL_ROUND_JOBS off, gives every call a job of its own, in a flow (as tool-workers of before expect)', async () => {
    const { ids, round, data, next } = await fanOutRound(['crm__a', 'crm__b', 'crm__c'], false);
    expect(ids).toEqual(['-t0-c0', '-t0-c1', '-t0-c2']);
    expect(round).toBeUndefined();
    expect(next).toBe('waiting-children');
    expect((await fanOutRound(['crm__a'], false)).next).toBe('waiting-children');
    expect(Object.values(data).map((d) => d.nextStep)).toEqual([undefined, undefined, undefined]);
  });
});

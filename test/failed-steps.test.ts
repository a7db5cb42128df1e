import { afterAll, beforeAll, expect, it } from 'vitest';
import { UnrecoverableError } from 'bullmq';
import { JobQueues, QUEUES } from '@agentq/shared';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// A step job that BullMQ fails for good without the step's processor ending its run (after too
// many stalls: its worker died mid-step each time) would leave the run running for ever. The
// agent-worker's sweep of failed step jobs ends it.

let stack: Stack;
let jobs: JobQueues;
beforeAll(async () => {
  // Every model call hangs: the step stays in flight until its job is failed under it.
  stack = await startStack({
    handler: () => ({ hang: true }),
    env: { STALLED_INTERVAL_MS: '300', MODEL_TIMEOUT_MS: '3000' },
  });
  jobs = new JobQueues({ connection: stack.redis, prefix: stack.prefix, cells: 1, logger: stack.logger });
});
afterAll(async () => {
  await jobs?.close();
  await stack?.close();
});

it('a step job failed for good without its step ending the run (as after too many stalls) fails the run and frees its slot', async () => {
  const run = await stack.createRun({ input: 'stuck' });
  await waitFor(async () => (await stack.stepState(run.id, 0)) === 'active', {
    what: 'the step to be in flight',
  });
  // What BullMQ's stalled-jobs check does to a job whose worker died mid-step once too often:
  // the job is moved to failed, its processor never told.
  const queue = jobs.queue(QUEUES.agent, 0);
  const job = (await queue.getJob(`${run.id}-t0`))!;
  const token = (await stack.redis.get(queue.toKey(`${job.id}:lock`)))!;
  await job.moveToFailed(new UnrecoverableError('job stalled more than allowable limit'), token);
  expect(await stack.stepState(run.id, 0)).toBe('failed');

  const ended = await stack.waitForRun(run.id, { timeoutMs: 10_000 });
  expect(ended).toMatchObject({ status: 'failed', stop_reason: 'error', error: { code: 'step_failed' } });
  expect(ended.error?.message).toContain('job stalled more than allowable limit');
  // Its key's slot is free again.
  await waitFor(async () => (await stack.getJson('/v1/usage')).active_runs === 0, {
    what: 'the run to leave active_runs',
  });
});

it("leaves a run its step carried on before its job was failed (the round's tool job exists)", async () => {
  const run = await stack.createRun({ input: 'carried on' });
  await waitFor(async () => (await stack.stepState(run.id, 0)) === 'active', {
    what: 'the step to be in flight',
  });
  // A delivery that lost its lock had fanned out: the round's job waits in the tool queue.
  const release = await stack.holdToolQueue();
  try {
    await jobs.enqueue('toolCalls', {
      runId: run.id,
      depth: 0,
      count: 2,
      calls: [0, 1].map((index) => ({ index, toolCallId: `call_${index}`, name: 'crm__count_calls', arguments: '{}' })),
      nextStep: {},
    });
    const queue = jobs.queue(QUEUES.agent, 0);
    const job = (await queue.getJob(`${run.id}-t0`))!;
    const token = (await stack.redis.get(queue.toKey(`${job.id}:lock`)))!;
    await job.moveToFailed(new UnrecoverableError('job stalled more than allowable limit'), token);
    // Several sweeps later (one every 300 ms here) the run is still going.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await stack.getJson(`/v1/runs/${run.id}`)).status).toBe('running');
  } finally {
    await stack.request(`/v1/runs/${run.id}/cancel`, { method: 'POST' });
    await release();
  }
});

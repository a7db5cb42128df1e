import { afterAll, beforeAll, expect, it } from 'vitest';
import { UnrecoverableError } from 'bullmq';
import { JobQueues, QUEUES, STALLED_OUT_REASON } from '@agentq/shared/jobs';
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

/** Fails the in-flight step job of `runId` as BullMQ would, with `reason`, its processor never told. */
async function failStepJob(runId: string, reason: string): Promise<void> {
  const queue = jobs.queue(QUEUES.agent, 0);
  const job = (await queue.getJob(`${runId}-t0`))!;
  const token = (await stack.redis.get(queue.toKey(`${job.id}:lock`)))!;
  await job.moveToFailed(new UnrecoverableError(reason), token);
}

it('a step job that stalled out (its worker died each time) fails its run with step_crashed_worker and frees its slot', async () => {
  const run = await stack.createRun({ input: 'stuck' });
  await waitFor(async () => (await stack.stepState(run.id, 0)) === 'active', {
    what: 'the step to be in flight',
  });
  // What BullMQ does to a job whose worker died mid-step once too often: the next worker to
  // pick it up moves it to failed with this reason, its processor never called.
  await failStepJob(run.id, STALLED_OUT_REASON);
  expect(await stack.stepState(run.id, 0)).toBe('failed');

  const ended = await stack.waitForRun(run.id, { timeoutMs: 10_000 });
  expect(ended).toMatchObject({ status: 'failed', stop_reason: 'error', error: { code: 'step_crashed_worker' } });
  expect(ended.error?.message).toMatch(/died each time it ran it/);
  // Its key's slot is free again.
  await waitFor(async () => (await stack.getJson('/v1/usage')).active_runs === 0, {
    what: 'the run to leave active_runs',
  });
});

it('a step job failed for good for another reason fails its run with step_failed, naming the reason', async () => {
  const run = await stack.createRun({ input: 'bad data' });
  await waitFor(async () => (await stack.stepState(run.id, 0)) === 'active', {
    what: 'the step to be in flight',
  });
  await failStepJob(run.id, 'invalid agentStep job data');
  const ended = await stack.waitForRun(run.id, { timeoutMs: 10_000 });
  expect(ended).toMatchObject({ status: 'failed', stop_reason: 'error', error: { code: 'step_failed' } });
  expect(ended.error?.message).toContain('invalid agentStep job data');
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
    await failStepJob(run.id, STALLED_OUT_REASON);
    // Several sweeps later (one every 300 ms here) the run is still going.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await stack.getJson(`/v1/runs/${run.id}`)).status).toBe('running');
  } finally {
    await stack.request(`/v1/runs/${run.id}/cancel`, { method: 'POST' });
    await release();
  }
});

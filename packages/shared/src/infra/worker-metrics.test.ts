import { EventEmitter } from 'node:events';
import type { Worker } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';
import { failedAttemptOutcome, observeWebhookDeliveries, observeWorkerJobs } from './worker-metrics.js';

const fakeWorker = (name: string) => Object.assign(new EventEmitter(), { name }) as unknown as Worker & EventEmitter;

async function series(m: ReturnType<typeof createMetrics>, name: string) {
  const metric = (await m.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (metric?.values ?? []).map(
    (v) =>
      ({ ...v.labels, value: v.value, metric: (v as { metricName?: string }).metricName }) as Record<
        string,
        string | number | undefined
      >,
  );
}

describe('worker metrics from BullMQ events', () => {
  it('tells a failed attempt that will be retried from one that ends the job', () => {
    expect(failedAttemptOutcome({ finishedOn: undefined })).toBe('retrying');
    expect(failedAttemptOutcome({ finishedOn: 1_700_000_000_000 })).toBe('failed');
    expect(failedAttemptOutcome(undefined)).toBe('failed');
  });

  it('counts attempts by outcome, completed durations and stalled jobs', async () => {
    const m = createMetrics({ service: 'tool-worker', processMetrics: false });
    const w = fakeWorker('tool');
    observeWorkerJobs(w, m);
    w.emit('completed', { processedOn: 1000, finishedOn: 1250 });
    w.emit('failed', { finishedOn: undefined }, new Error('try again'));
    w.emit('failed', { finishedOn: 2000 }, new Error('gave up'));
    w.emit('stalled', 'job-1', 'active');
    expect((await series(m, 'agentq_job_attempts_total')).map((s) => [s.outcome, s.value])).toEqual([
      ['completed', 1],
      ['retrying', 1],
      ['failed', 1],
    ]);
    expect(
      (await series(m, 'agentq_job_duration_seconds')).find((s) => s.metric === 'agentq_job_duration_seconds_sum')
        ?.value,
    ).toBe(0.25);
    expect((await series(m, 'agentq_jobs_stalled_total'))[0]).toMatchObject({ queue: 'tool', value: 1 });
  });

  it('counts webhook deliveries: delivered, retrying, failed', async () => {
    const m = createMetrics({ service: 'tool-worker', processMetrics: false });
    const w = fakeWorker('webhook');
    observeWebhookDeliveries(w, m);
    w.emit('failed', { finishedOn: undefined }, new Error('503'));
    w.emit('completed', {});
    w.emit('failed', { finishedOn: 5 }, new Error('410 Gone'));
    expect((await series(m, 'agentq_webhook_deliveries_total')).map((s) => [s.outcome, s.value])).toEqual([
      ['retrying', 1],
      ['delivered', 1],
      ['failed', 1],
    ]);
  });
});

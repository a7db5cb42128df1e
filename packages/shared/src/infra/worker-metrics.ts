import type { Job, Worker } from 'bullmq';
import type { AgentqMetrics } from './metrics.js';

/**
 * How a failed attempt ended: `retrying` when BullMQ scheduled another attempt, `failed` when
 * it gave up (attempts used up, or an UnrecoverableError). BullMQ sets `finishedOn` only then.
 */
export function failedAttemptOutcome(job: Pick<Job, 'finishedOn'> | undefined): 'retrying' | 'failed' {
  return job && !job.finishedOn ? 'retrying' : 'failed';
}

/**
 * Counts a worker's job attempts, their durations and stalled jobs from BullMQ's worker
 * events, so that the processors need not know about metrics.
 */
export function observeWorkerJobs(worker: Worker, metrics: AgentqMetrics): void {
  const queue = worker.name;
  worker.on('completed', (job) => {
    metrics.jobAttempts.inc({ queue, outcome: 'completed' });
    if (job.processedOn && job.finishedOn && job.finishedOn >= job.processedOn) {
      metrics.jobDuration.observe({ queue }, (job.finishedOn - job.processedOn) / 1000);
    }
  });
  worker.on('failed', (job) => metrics.jobAttempts.inc({ queue, outcome: failedAttemptOutcome(job) }));
  worker.on('stalled', () => metrics.jobsStalled.inc({ queue }));
}

/** Counts webhook deliveries by outcome from the webhook worker's events. */
export function observeWebhookDeliveries(worker: Worker, metrics: AgentqMetrics): void {
  worker.on('completed', () => metrics.webhookDeliveries.inc({ outcome: 'delivered' }));
  worker.on('failed', (job) => metrics.webhookDeliveries.inc({ outcome: failedAttemptOutcome(job) }));
}

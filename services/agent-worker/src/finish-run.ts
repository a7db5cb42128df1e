import type { Queue } from 'bullmq';
import { jobIds, jobNames, jobOptions, newId, type FinishInput, type Logger, type RunObject, type RunStore, type WebhookJob } from '@agentq/shared';

/** Ends a run once and, if it has a webhook, queues the delivery of its terminal event. */
export async function finishRun(
  deps: { store: RunStore; logger: Logger; webhookQueue?: Queue },
  runId: string,
  input: FinishInput,
  hasWebhook: boolean,
): Promise<RunObject | null> {
  const run = await deps.store.finishRun(runId, input);
  if (!run) return null;
  deps.logger.info({ run_id: runId, status: run.status, stop_reason: run.stop_reason }, 'run finished');
  if (hasWebhook && deps.webhookQueue) {
    const type = `run.${run.status}`;
    const webhookId = newId('whk');
    const data: WebhookJob = { runId, webhookId, type };
    await deps.webhookQueue.add(jobNames.webhook(runId, type), data, { ...jobOptions.webhook, jobId: jobIds.webhook(webhookId, type) });
  }
  return run;
}

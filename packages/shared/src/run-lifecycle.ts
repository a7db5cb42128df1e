import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { newId } from './ids.js';
import { jobIds, jobNames, jobOptions } from './queues.js';
import type { FinishInput, RunStore } from './run-store.js';
import type { WebhookJob } from './schemas/jobs.js';
import type { RunObject } from './schemas/run.js';

/** What ending a run needs: the store, and the webhook queue for its notification. */
export interface FinishDeps {
  store: RunStore;
  logger: Logger;
  webhookQueue?: Queue;
}

/**
 * Ends a run once (a run that has already ended is left as it is, and null returned) and,
 * if it has a webhook, queues the delivery of its terminal event.
 */
export async function finishRun(deps: FinishDeps, runId: string, input: FinishInput): Promise<RunObject | null> {
  const ended = await deps.store.finishRun(runId, input);
  if (!ended) return null;
  const { run, spec } = ended;
  deps.logger.info({ run_id: runId, depth: run.depth, status: run.status, stop_reason: run.stop_reason }, 'run finished');
  if (spec.webhook && deps.webhookQueue) {
    const type = `run.${run.status}`;
    const webhookId = newId('whk');
    const data: WebhookJob = { runId, webhookId, type };
    await deps.webhookQueue.add(jobNames.webhook(runId, type), data, { ...jobOptions.webhook, jobId: jobIds.webhook(webhookId, type) });
  }
  return run;
}

/** The pub/sub channel on which a cancel reaches every worker process. */
export const cancelChannel = (prefix: string) => `${prefix}:cancel`;

/**
 * Tracks the jobs a worker process runs per run, and aborts them when a cancel for their
 * run is published (from any API process). One subscriber connection per process.
 */
export class CancelListener {
  private readonly active = new Map<string, Map<string, AbortController>>();

  constructor(
    private readonly sub: Redis,
    private readonly prefix: string,
  ) {}

  async start(): Promise<void> {
    this.sub.on('message', (_channel: string, runId: string) => this.abortRun(runId));
    await this.sub.subscribe(cancelChannel(this.prefix));
  }

  /** Registers a job of a run; returns a signal that aborts on cancel, and a release. */
  track(runId: string, jobId: string, parent?: AbortSignal): { signal: AbortSignal; release: () => void } {
    const ctrl = new AbortController();
    parent?.addEventListener('abort', () => ctrl.abort(parent.reason), { once: true });
    let jobs = this.active.get(runId);
    if (!jobs) this.active.set(runId, (jobs = new Map()));
    jobs.set(jobId, ctrl);
    return {
      signal: ctrl.signal,
      release: () => {
        jobs.delete(jobId);
        if (jobs.size === 0 && this.active.get(runId) === jobs) this.active.delete(runId);
      },
    };
  }

  abortRun(runId: string): void {
    for (const ctrl of this.active.get(runId)?.values() ?? []) ctrl.abort(new Error(`run ${runId} was cancelled`));
  }

  async close(): Promise<void> {
    await this.sub.quit().catch(() => {});
  }
}

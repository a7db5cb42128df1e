import type { RedisClient } from '../infra/redis.js';
import { globalKeys } from '../store/keys.js';

/**
 * Tracks the jobs a worker process runs per run, and aborts them when a cancel for their
 * run is published (from any API process), on one subscriber connection per process.
 */
export class CancelListener {
  private readonly active = new Map<string, Map<string, AbortController>>();

  constructor(
    private readonly sub: RedisClient,
    private readonly prefix: string,
  ) {}

  async start(): Promise<void> {
    this.sub.on('message', (_channel: string, runId: string) => this.abortRun(runId));
    await this.sub.subscribe(globalKeys(this.prefix).cancelChannel);
  }

  /** Registers a job of a run; returns a signal that aborts on cancel, and a release. */
  track(runId: string, jobId: string, parent?: AbortSignal): { signal: AbortSignal; release: () => void } {
    const ctrl = new AbortController();
    parent?.addEventListener('abort', () => ctrl.abort(parent.reason), { once: true });
    let jobs = this.active.get(runId);
    if (!jobs) {
      jobs = new Map();
      this.active.set(runId, jobs);
    }
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

  /** Stops listening; the subscriber connection is its tenant's to close. */
  async close(): Promise<void> {
    await this.sub.unsubscribe(globalKeys(this.prefix).cancelChannel).catch(() => {});
  }
}

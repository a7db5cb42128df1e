import type { Logger } from '@agentq/shared/infra';
import type { Runs } from '@agentq/shared/runs';

/**
 * Every API process sweeps the runs that were written but whose first step its creator did not
 * get to enqueue (it died in between): once at start and every `intervalMs`, for runs pending
 * longer than `graceMs` (a live creator settles its run within milliseconds), and likewise the
 * answers whose job was not woken (`answered`); every `reconcileEvery`-th sweep (and the first)
 * also runs `reconcile`. Returns the stop.
 */
export function startPendingSweep(
  runs: Runs,
  logger: Logger,
  opts: {
    intervalMs: number;
    graceMs: number;
    answered?: (graceMs: number) => Promise<number>;
    reconcile?: () => Promise<void>;
    reconcileEvery?: number;
  },
): () => Promise<void> {
  let running: Promise<void> | null = null;
  let count = 0;
  const every = opts.reconcileEvery ?? 12;
  const sweep = () => {
    running ??= runs
      .sweepPending(opts.graceMs)
      .then(() => opts.answered?.(opts.graceMs))
      .then(() => (count++ % every === 0 ? opts.reconcile?.() : undefined))
      .catch((err: Error) => logger.warn({ err: err.message }, 'could not sweep pending runs'))
      .finally(() => (running = null));
    return running;
  };
  void sweep();
  const timer = setInterval(() => void sweep(), opts.intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}

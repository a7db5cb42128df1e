import type { JobsOptions } from 'bullmq';

/** The queues of agentq, under `QUEUE_PREFIX`. */
export const QUEUES = { agent: 'agent', tool: 'tool', webhook: 'webhook' } as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/** Job ids derive from run ids so a re-delivered step can never be enqueued twice. */
export const jobIds = {
  agentTurn: (runId: string, depth: number) => `${runId}-t${depth}`,
  toolCall: (runId: string, depth: number, index: number) => `${runId}-t${depth}-c${index}`,
  webhook: (webhookId: string, type: string) => `${webhookId}-${type.replace(/\W/g, '_')}`,
};

/** Job names, which is what Bull Board shows: they say which run, depth and tool a job is. */
export const jobNames = {
  agentTurn: (runId: string, depth: number) => `${runId} · turn ${depth}`,
  toolCall: (runId: string, depth: number, tool: string) => `${runId} · turn ${depth} · ${tool}`,
  webhook: (runId: string, type: string) => `${runId} · ${type}`,
};

// Kept jobs, by age and count: removeOnComplete:true races with waitUntilFinished (see NOTES).
const keep = { removeOnComplete: { age: 3600, count: 10_000 }, removeOnFail: { age: 7 * 24 * 3600 } } as const;

/**
 * Retry policy per job kind. Flow jobs do not get queue defaultJobOptions (bullmq #1148), so
 * every add passes these explicitly.
 */
export const jobOptions = {
  // 'provider': exponential from 1 s with jitter, or the provider's Retry-After when it sent one
  // (see providerBackoff; the agent-worker registers it).
  agentTurn: { attempts: 8, backoff: { type: 'provider', delay: 1000 }, ...keep } satisfies JobsOptions,
  // ignoreDependencyOnFailure: a tool job that still fails (stalled too often) must release its
  // parent turn instead of leaving it in waiting-children forever (bullmq #3362).
  toolCall: { attempts: 4, backoff: { type: 'exponential', delay: 500, jitter: 0.5 }, ignoreDependencyOnFailure: true, ...keep } satisfies JobsOptions,
  webhook: { attempts: 10, backoff: { type: 'webhook' }, ...keep } satisfies JobsOptions,
};

/**
 * Worker lock settings. A job's lock is renewed every lockDuration/2 while it runs, so a
 * 2-minute model call keeps its lock; a killed worker's lock lapses after lockDuration and the
 * next stall check (every stalledInterval) hands the job to another worker: seconds, not
 * BullMQ's default minute.
 */
export function workerLockOptions(cfg: { JOB_LOCK_MS: number; STALLED_INTERVAL_MS: number }) {
  return { lockDuration: cfg.JOB_LOCK_MS, stalledInterval: cfg.STALLED_INTERVAL_MS, maxStalledCount: 3 };
}

/**
 * Delay before retrying a model step: the provider's Retry-After when the error carries one
 * (a 503 that says when to come back), else exponential from `baseMs` with ±50 % jitter.
 * Capped at 10 minutes.
 */
export function providerBackoff(attemptsMade: number, err: unknown, baseMs = 1000, random = Math.random): number {
  const retryAfter = (err as { retryAfterMs?: number } | undefined)?.retryAfterMs;
  if (typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0) return Math.min(Math.max(retryAfter, 100), 600_000);
  const exp = baseMs * 2 ** Math.max(0, attemptsMade - 1);
  return Math.min(Math.round(exp * (0.5 + random())), 600_000);
}

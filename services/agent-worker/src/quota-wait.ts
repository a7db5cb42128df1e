import { DelayedError } from 'bullmq';
import type { RetryableError } from '@agentq/shared/core';
import type { JobLogger } from '@agentq/shared/infra';
import type { JobContext, JobInput } from '@agentq/shared/jobs';
import type { AgentStepDeps, StepResult } from './agent-step-processor.js';

/**
 * A step the provider answered 429: it alone waits for the provider's Retry-After, without using
 * up an attempt (its job is parked delayed: no worker slot); the other runs' steps go on (one
 * tenant's rate-limited model does not hold up another's). It waits at most
 * MODEL_RATE_LIMIT_MAX_WAIT_MS in all: a quota that never comes back ends the run (a run without
 * timeout_ms would otherwise wait for ever, holding its tenant's slot). A Retry-After past that
 * bound is cut to it: one more try at the bound.
 */
export async function waitForQuota(
  err: RetryableError,
  data: JobInput<'agentStep'>,
  ctx: JobContext,
  deps: Pick<AgentStepDeps, 'runs' | 'rateLimitMaxWaitMs'>,
  log: JobLogger,
): Promise<StepResult> {
  const { job } = ctx;
  const runId = data.runId;
  const now = Date.now();
  const since = data.rateLimitedSince ?? now;
  const maxWaitMs = deps.rateLimitMaxWaitMs ?? 900_000;
  const ms = Math.min(Math.max(err.retryAfterMs ?? 1000, 100), 60_000, since + maxWaitMs - now);
  if (ms <= 0) {
    const message = `${err.message}; the model endpoint has answered 429 for ${Math.round((now - since) / 1000)} s, and the step waits at most ${Math.round(maxWaitMs / 1000)} s (MODEL_RATE_LIMIT_MAX_WAIT_MS)`;
    log.error({ rate_limited_ms: now - since }, 'model rate limited for too long; the run fails');
    await deps.runs.finish(runId, {
      status: 'failed',
      stopReason: 'error',
      error: { code: 'model_rate_limited', message },
    });
    return { failed: 'model_rate_limited' };
  }
  log.warn({ retry_after_ms: ms }, 'model rate limited; the step waits');
  if (data.rateLimitedSince === undefined) await job.updateData({ ...job.data, rateLimitedSince: since });
  await job.moveToDelayed(now + ms, ctx.token);
  throw new DelayedError();
}

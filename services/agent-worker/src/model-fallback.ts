import { DelayedError } from 'bullmq';
import type { RetryableError, RunSpec } from '@agentq/shared/core';
import type { JobLogger } from '@agentq/shared/infra';
import { providerBackoff, type JobContext, type JobInput } from '@agentq/shared/jobs';
import type { ProviderBusyError } from './providers.js';

/** The model a step calls: the run's, or the fallback it has moved on to (`modelIndex`). */
export function stepModel(spec: Pick<RunSpec, 'model' | 'fallback_models'>, modelIndex = 0): string {
  return modelIndex === 0 ? spec.model : (spec.fallback_models?.[modelIndex - 1] ?? spec.model);
}

/** Parks a step's job until `ms` from now (delayed: no worker slot); it runs again from the start then. */
export async function parkStep(ctx: JobContext, ms: number): Promise<never> {
  await ctx.job.moveToDelayed(Date.now() + Math.max(1, ms), ctx.token);
  throw new DelayedError();
}

/** A step whose provider could not take its call now waits for it, parked; it counts no attempt. */
export function waitForProvider(err: ProviderBusyError, ctx: JobContext, log: JobLogger): Promise<never> {
  log.debug({ provider: err.provider, reason: err.reason, wait_ms: err.waitMs }, 'provider busy; the step waits');
  return parkStep(ctx, err.waitMs);
}

/**
 * A retryable fault of a step whose run has `fallback_models`: the step is tried again on its
 * model, with the backoff of any step (the provider's Retry-After when it gives one), as many
 * times as a step's job has attempts; once they are spent, it moves on to the next model, which
 * gets as many. The job is parked meanwhile (no attempt of BullMQ's is used). Returns false when
 * the last model's tries are spent: the run then fails as any step's would.
 */
export async function retryOrFallBack(
  err: RetryableError,
  data: JobInput<'agentStep'>,
  ctx: JobContext,
  spec: Pick<RunSpec, 'model' | 'fallback_models'>,
  backoffBaseMs: number,
  log: JobLogger,
): Promise<false> {
  const models = 1 + (spec.fallback_models?.length ?? 0);
  const index = data.modelIndex ?? 0;
  const tries = (data.modelAttempts ?? 0) + 1;
  const attempts = ctx.job.opts.attempts ?? 1;
  if (tries < attempts) {
    await ctx.job.updateData({ ...ctx.job.data, modelAttempts: tries });
    log.warn({ err: err.message, model: stepModel(spec, index), attempt: tries }, 'model step failed; will retry');
    return parkStep(ctx, providerBackoff(tries, err, backoffBaseMs));
  }
  if (index + 1 >= models) return false;
  const next = stepModel(spec, index + 1);
  log.warn({ err: err.message, model: stepModel(spec, index), next }, 'model keeps failing; the step falls back');
  await ctx.job.updateData({ ...ctx.job.data, modelIndex: index + 1, modelAttempts: 0 });
  return parkStep(ctx, 1);
}

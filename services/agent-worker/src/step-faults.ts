import { AgentqError, isTerminal, RetryableError, type RunSpec } from '@agentq/shared/core';
import type { JobLogger } from '@agentq/shared/infra';
import type { JobContext, JobInput } from '@agentq/shared/jobs';
import type { AgentStepDeps, StepResult } from './agent-step-processor.js';
import { retryOrFallBack } from './model-fallback.js';
import { waitForQuota } from './quota-wait.js';

/**
 * What a step that threw comes to. Fatal errors end the run now; anything else (provider faults,
 * a Redis blip) is retried: by BullMQ with backoff; a 429 by waiting for the provider's quota
 * (quota-wait.ts); a run with fallback_models by its own tries, then the next model
 * (model-fallback.ts). A step cancelled or shut down under its feet ends quietly or is rethrown.
 */
export async function stepFault(
  err: unknown,
  data: JobInput<'agentStep'>,
  ctx: JobContext,
  deps: AgentStepDeps,
  spec: RunSpec,
  log: JobLogger,
): Promise<StepResult> {
  const { job, signal } = ctx;
  const { runId } = data;
  let final = (err instanceof AgentqError && !err.retryable) || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  if (signal?.aborted) {
    // Cancelled (the run has ended: nothing to do) or shutting down (another worker redoes it).
    const now = await deps.store.runs.getState(runId);
    if (!now || isTerminal(now.status)) return { skipped: 'cancelled' };
    throw err;
  }
  if (spec.fallback_models && err instanceof RetryableError) {
    // Parks the job unless every model's tries are spent.
    await retryOrFallBack(err, data, ctx, spec, deps.backoffBaseMs ?? 1000, log);
    final = true;
  } else if (err instanceof RetryableError && err.code === 'model_rate_limited')
    return waitForQuota(err, data, ctx, deps, log);
  if (!final) {
    log.warn({ err: (err as Error).message, attempt: job.attemptsMade + 1 }, 'model step failed; will retry');
    throw err;
  }
  const code = err instanceof AgentqError ? err.code : 'internal_error';
  const message =
    err instanceof AgentqError ? err.message : `internal error in the agent worker: ${(err as Error).message}`;
  log.error({ err }, 'model step failed for good; the run fails');
  await deps.runs.finish(runId, { status: 'failed', stopReason: 'error', error: { code, message } });
  return { failed: code };
}

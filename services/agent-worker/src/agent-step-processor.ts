import type OpenAI from 'openai';
import { isTerminal, RetryableError, runDeadline, toolLimitRefusals, type ChatMessage } from '@agentq/shared/core';
import { lazyChild, type JobLogger, type Logger } from '@agentq/shared/infra';
import {
  type RunState,
  type RunStore,
  type StepInput,
  type StepRecord,
  type ToolCatalogEntry,
} from '@agentq/shared/store';
import { type JobInput, type JobContext, type JobQueues } from '@agentq/shared/jobs';
import { type RunActions, type Runs, type TokenTally } from '@agentq/shared/runs';
import { exhaustedBudget } from './budgets.js';
import { readStepInput } from './step-input.js';
import type { DailyTokens } from './daily-tokens.js';
import { DeltaBuffer } from './delta-buffer.js';
import type { TranscriptCache } from './transcript-cache.js';
import type { TranscriptsInFlight } from './transcripts-in-flight.js';
import { fanOut } from './fan-out.js';
import type { AnswerHold } from './model-answers-in-flight.js';
import { callModel } from './model-step.js';
import { stepModel, waitForProvider } from './model-fallback.js';
import { stepFault } from './step-faults.js';
import { countSpend, spentBudget, stepUsage } from './step-cost.js';
import { repairAnswer, repairPlan, resumeRepair } from './structured-repair.js';
import { ProviderBusyError, providersOf, type Providers } from './providers.js';
import {
  decideStep,
  planOfStoredStep,
  planStep,
  type CallPlan,
  type ModelAnswer,
  type StepOutcome,
} from './step-decision.js';
import { offeredTools } from './tool-offer.js';

/** What the agent-step processor works with; tests build it against a real Redis. */
export interface AgentStepDeps {
  store: RunStore;
  runs: Runs;
  jobs: JobQueues;
  /** Requests for an answer (approvals, client tools, questions) a round's calls make. */
  actions: RunActions;
  /** The longest a waiting call's job stays delayed at once (ACTION_PARK_MAX_MS). */
  actionParkMs: number;
  openai: OpenAI;
  /** The model providers (PROVIDERS_CONFIG); unset: `openai` alone, with no limits of its own. */
  providers?: Providers;
  /** First retry delay of a failed step of a run with fallback_models (MODEL_BACKOFF_BASE_MS). @defaultValue 1000 */
  backoffBaseMs?: number;
  logger: Logger;
  /** The tool catalog, cached by the caller. */
  tools: () => Promise<ToolCatalogEntry[]>;
  /** Counts each step's tokens into its tenant's day (max_tokens_per_day, GET /v1/usage). */
  tokens?: TokenTally;
  /** Whether a tenant has used up its max_tokens_per_day (checked before every step). */
  dailyTokens?: DailyTokens;
  modelTimeoutMs: number;
  modelIdleTimeoutMs: number;
  /** The most bytes of a model's answer read (MODEL_RESPONSE_MAX_MB). */
  modelResponseMaxBytes?: number;
  /** The longest a step waits in all for a provider that keeps answering 429 (MODEL_RATE_LIMIT_MAX_WAIT_MS). @defaultValue 15 minutes */
  rateLimitMaxWaitMs?: number;
  /** Transcripts of this worker's last steps: a run's next step here reads only what was added since. */
  transcripts?: TranscriptCache;
  /** Bounds the transcripts this worker's steps hold at once (TRANSCRIPTS_IN_FLIGHT_MB); unset: no bound. */
  inFlight?: TranscriptsInFlight;
  /** What this step's model answers hold in the worker (MODEL_ANSWERS_IN_FLIGHT_MB); unset: no bound. */
  answer?: AnswerHold;
}

/** What a step job returns (shown by Bull Board; also the step span's outcome). */
export type StepResult = { outcome: string; [k: string]: unknown } | { skipped: string } | { failed: string };

/** Runs ONE model step of a run: the heart of the durable loop. */
export async function processAgentStep(
  data: JobInput<'agentStep'>,
  ctx: JobContext,
  deps: AgentStepDeps,
): Promise<StepResult> {
  const { runId, depth } = data;
  const log = lazyChild(deps.logger, { run_id: runId, job_id: ctx.job.id, depth });
  let read: Awaited<ReturnType<typeof readStepInput>>;
  try {
    read = await readStepInput(deps, runId, depth, ctx.signal, data.transcriptBytes);
  } catch (err) {
    // Cancelled while waiting for room (the run has ended: nothing to do), or shutting down.
    if (!ctx.signal?.aborted) throw err;
    const now = await deps.store.runs.getState(runId);
    if (!now || isTerminal(now.status)) return { skipped: 'cancelled' };
    throw err;
  }
  if ('tooLarge' in read) {
    const { run, size } = read.tooLarge;
    deps.transcripts?.delete(runId);
    if (isTerminal(run.status)) return { skipped: run.status };
    const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
    const message = `the transcript is ${mb(size)} MB, more than one step may hold in this agent-worker (TRANSCRIPTS_IN_FLIGHT_MB=${mb(deps.inFlight!.capacity)})`;
    log.error({ transcript_bytes: size }, 'transcript too large; the run fails');
    await deps.runs.finish(runId, {
      status: 'failed',
      stopReason: 'error',
      error: { code: 'transcript_too_large', message },
    });
    return { failed: 'transcript_too_large' };
  }
  try {
    return await stepFrom(read.input, data, ctx, deps, log);
  } finally {
    read.room?.release();
  }
}

/** The step once its input is read (and, when the worker bounds transcripts, room taken for it). */
async function stepFrom(
  input: StepInput | null,
  data: JobInput<'agentStep'>,
  ctx: JobContext,
  deps: AgentStepDeps,
  log: JobLogger,
): Promise<StepResult> {
  const { runId, depth } = data;
  const { signal } = ctx;
  const cache = deps.transcripts;
  if (!input || isTerminal(input.run.status)) cache?.delete(runId);
  if (!input) {
    log.warn('run not found (expired or deleted); dropping the step');
    return { skipped: 'missing' };
  }
  const { run } = input;
  if (isTerminal(run.status)) {
    // Redelivered after the run ended: its webhook may not have been queued (the process that
    // ended it died first).
    await deps.runs.ensureEndWebhook(run);
    return { skipped: run.status };
  }
  // Its round is done, so the next step was added already: this job came again.
  if (input.done) return { skipped: (await resumeRepair(deps, input, data)) ? 'repair resumed' : 'done before' };
  // A sub-run reads its tree in one round trip: the tokens used, and whether an ancestor has
  // ended (a cancel marks only the run it names; the tree below stops on seeing it).
  const tree = run.spec.ancestors.length
    ? await deps.store.runs.ancestry(run.spec.ancestors)
    : { treeTokens: run.usageTotal.total_tokens, ancestorOver: false };
  if (tree.ancestorOver) {
    cache?.delete(runId);
    await deps.runs.finish(runId, { status: 'cancelled', stopReason: 'cancelled' });
    return { skipped: 'ancestor ended' };
  }
  const { messages, size } = input;
  // A step is enqueued only once its round is complete (by the job that stored the round's last
  // result): a round found incomplete was lost by a failover of Redis; the job is retried, and
  // fails the run once its attempts are spent (failed-steps.ts).
  if (depth > 0 && !input.roundAppended) {
    throw new RetryableError(`the tool results of round ${depth - 1} are not in the transcript`, 'round_incomplete');
  }
  // What the transcript holds now, in this order, and the spec: the next step here reads only
  // what follows.
  cache?.set(runId, { createdAt: run.createdAt, messages: [...messages], size, spec: input.spec });
  // Not awaited: commands on one connection keep their order, so `run.started` still lands
  // before the step's events; if it fails, the next step (still seeing 'queued') tries again.
  if (run.status === 'queued')
    void deps.runs.start(runId).catch((err: Error) => log.warn({ err: err.message }, 'could not mark the run started'));

  try {
    const step = input.step;
    const result = await runStep(deps, run, depth, messages, size, step, tree, log, signal, data);
    // Only a step that fanned tool calls out has a next step.
    if (!('outcome' in result) || result.outcome !== 'tool_calls') cache?.delete(runId);
    return result;
  } catch (err) {
    // Its provider cannot take the call now (its own limits): the step waits, parked.
    if (err instanceof ProviderBusyError) return waitForProvider(err, ctx, log);
    cache?.delete(runId);
    return stepFault(err, data, ctx, deps, run.spec, log);
  }
}

/** Plans the step, makes the model call (unless a redelivery finds it made), decides, and carries the decision out. */
async function runStep(
  deps: AgentStepDeps,
  run: RunState,
  depth: number,
  messages: ChatMessage[],
  /** The stored size of `messages`, which the next step is told. */
  size: number,
  committed: StepRecord | null,
  tree: { treeTokens: number },
  log: JobLogger,
  signal?: AbortSignal,
  /** Which of the run's models the step calls (see stepModel), and which repair it is (structured-repair.ts). */
  job: Pick<JobInput<'agentStep'>, 'modelIndex' | 'repair'> = {},
): Promise<StepResult> {
  const { spec } = run;
  const catalog = await deps.tools();
  const tools = offeredTools(catalog, spec);
  const hasTools = tools.length > 0;
  // max_total_tokens and max_cost_usd hold for the whole tree: the root's usage_total.
  const budget = exhaustedBudget(spec, {
    // A repair round is not a round of tools: max_depth does not end it.
    depth: job.repair ? 0 : depth,
    treeTokens: tree.treeTokens,
    runTokens: run.usageTotal.total_tokens,
    ...(spec.max_cost_usd !== undefined || spec.subtree_max_cost_usd !== undefined ? await spentBudget(deps, run) : {}),
    createdAtMs: Date.parse(run.createdAt),
    deadlineAtMs: spec.deadline_at,
    nowMs: Date.now(),
    dayTokensUsedUp: (await deps.dailyTokens?.exceeded(run.tenant)) ?? false,
  });
  const plan = repairPlan(planStep(spec, budget, hasTools), job.repair);
  if (plan.kind === 'stop') {
    await deps.runs.finish(run.id, { status: 'incomplete', stopReason: plan.budget });
    return { outcome: 'budget_exhausted', budget: plan.budget };
  }

  let decision: StepOutcome;
  if (committed)
    decision = decideStep(
      planOfStoredStep(plan, committed),
      { kind: 'message', message: committed.message },
      spec,
      hasTools,
    );
  else {
    const attempt = { model: stepModel(spec, job.modelIndex), repair: job.repair };
    const made = await makeStep(deps, run, depth, messages, tools, plan, log, signal, attempt);
    if (!made) {
      // The run ended meanwhile, or an ancestor did: then this sub-run ends too (a cancel would
      // have ended it already; an ancestor that ended otherwise, or a cancel cut short, did not).
      if (run.spec.ancestors.length && (await deps.store.runs.ancestry(run.spec.ancestors)).ancestorOver) {
        await deps.runs.finish(run.id, { status: 'cancelled', stopReason: 'cancelled' });
      }
      return { skipped: 'ended during the step' };
    }
    decision = made;
  }

  switch (decision.kind) {
    case 'tool_calls':
      await fanOut(
        { jobs: deps.jobs, actions: deps.actions, catalog, parkMs: deps.actionParkMs },
        run,
        depth,
        decision.toolCalls,
        size,
        // Calls past the run's tool_limits are refused, not made (counted over the earlier steps:
        // a step committed before, this job came again, is the transcript's last message).
        spec.tool_limits &&
          toolLimitRefusals(spec.tool_limits, committed ? messages.slice(0, -1) : messages, decision.toolCalls),
      );
      return { outcome: 'tool_calls', count: decision.toolCalls.length };
    case 'budget_exhausted':
      await deps.runs.finish(run.id, {
        status: 'incomplete',
        stopReason: decision.budget,
        output: decision.message ?? null,
      });
      return { outcome: 'budget_exhausted', budget: decision.budget };
    case 'failed':
      // An answer that failed the response_format goes back to the model while repairs are left.
      if (await repairAnswer(deps, run, depth, decision.error, job.repair ?? 0)) return { outcome: 'repair' };
      await deps.runs.finish(run.id, {
        status: 'failed',
        stopReason: 'error',
        output: decision.output,
        error: decision.error,
      });
      return { outcome: 'failed', code: decision.error.code };
    case 'final_answer':
      await deps.runs.finish(run.id, {
        status: 'completed',
        stopReason: decision.stopReason,
        output: decision.output,
        outputParsed: decision.outputParsed,
      });
      return { outcome: 'final_answer' };
  }
}

/**
 * Calls the model (streaming its text out as events), decides on the answer and commits the
 * step. A step in flight at the run's deadline is abandoned, and the decision says what then.
 * Returns the decision on the step that is stored (a concurrent delivery's, if it won), or null
 * when the run ended meanwhile.
 */
async function makeStep(
  deps: AgentStepDeps,
  run: RunState,
  depth: number,
  messages: ChatMessage[],
  tools: ReturnType<typeof offeredTools>,
  first: CallPlan,
  log: JobLogger,
  signal?: AbortSignal,
  /** The model called (the run's, or a fallback of it), and which repair the step is. */
  attempt: { model: string; repair?: number } = { model: run.spec.model },
): Promise<StepOutcome | null> {
  const { spec } = run;
  const { model } = attempt;
  const route = providersOf(deps).route(model);
  const hasTools = tools.length > 0;
  const startedAt = new Date().toISOString();
  const deltas = new DeltaBuffer(
    (text) => void deps.store.events.append(run.id, 'message.delta', { depth, text }).catch(() => {}),
  );
  // Through the model's provider: room in its limits first (else ProviderBusyError, before any
  // event of the call), released when the call ends; a 429 makes the provider rest.
  const call = async (p: CallPlan, stepSignal?: AbortSignal) => {
    const release = await route.provider.admit();
    try {
      // Not awaited: commands on one connection keep their order, so this event still lands
      // before the step's deltas and its completion, without a round trip of its own.
      void deps.store.events
        .append(run.id, 'step.started', { depth, model, tools_disabled: p.toolChoice === 'none' }, { trim: false })
        .catch(() => {});
      return await callModel(route.provider.client, {
        model: route.model,
        messages,
        tools,
        toolChoice: p.toolChoice,
        responseFormat: spec.response_format,
        settings: spec.model_settings,
        signal: stepSignal,
        timeoutMs: deps.modelTimeoutMs,
        idleTimeoutMs: deps.modelIdleTimeoutMs,
        maxResponseBytes: deps.modelResponseMaxBytes,
        answer: deps.answer,
        onDelta: (t) => deltas.push(t),
      });
    } catch (err) {
      if (err instanceof RetryableError && err.code === 'model_rate_limited') route.provider.rest(err.retryAfterMs);
      throw err;
    } finally {
      release();
    }
  };

  const deadline = runDeadline(spec, Date.parse(run.createdAt));
  // The deadline bounds every call but final_answer's last one (tools disabled on a budget), which
  // a run under that policy gets even past its deadline. A call at max_depth under `stop` is bounded.
  const lastCall = first.budget !== null && spec.on_budget_exhausted === 'final_answer';
  const deadlineSignal =
    deadline !== undefined && !lastCall ? AbortSignal.timeout(Math.max(1, deadline - Date.now())) : undefined;
  let plan = first;
  let response: Awaited<ReturnType<typeof callModel>> | undefined;
  let answer: ModelAnswer;
  try {
    response = await call(
      plan,
      deadlineSignal && signal ? AbortSignal.any([signal, deadlineSignal]) : (deadlineSignal ?? signal),
    );
    answer = { kind: 'message', message: response.message };
  } catch (err) {
    if (!deadlineSignal?.aborted || signal?.aborted) throw err;
    deltas.flush();
    log.info('deadline passed during the model step');
    answer = { kind: 'deadline_passed' };
  }
  let decision = decideStep(plan, answer, spec, hasTools);
  if (decision.kind === 'final_call') {
    plan = decision.plan;
    response = await call(plan, signal);
    decision = decideStep(plan, { kind: 'message', message: response.message }, spec, hasTools);
  }
  deltas.flush();
  if (!response || !('message' in decision) || !decision.message) return decision;

  const record: StepRecord = {
    depth,
    status: 'completed',
    model,
    usage: stepUsage(route, response.usage),
    started_at: startedAt,
    completed_at: new Date().toISOString(),
    message: decision.message,
    ...(plan.budget && plan.toolChoice !== 'auto' ? { budget: plan.budget } : {}),
    ...(attempt.repair ? { repair: attempt.repair } : {}),
    ...(decision.kind === 'failed' ? { error: decision.error } : {}),
  };
  const stored = await deps.store.transcript.commitStep(run, record, {
    depth,
    usage: record.usage,
    finish_reason: response.finishReason,
    content: record.message.content,
    tool_calls: (record.message.tool_calls ?? []).map((t) => ({
      id: t.id,
      name: t.function.name,
      arguments: t.function.arguments,
    })),
  });
  if (!stored) return null;
  if (stored === record) countSpend(deps.tokens, run.tenant, route, record.usage);
  log.debug({ usage: stored.usage, tool_calls: stored.message.tool_calls?.length ?? 0 }, 'model step done');
  // Another delivery committed this depth first: what it stored is what the run goes on from.
  return stored === record
    ? decision
    : decideStep(planOfStoredStep(plan, stored), { kind: 'message', message: stored.message }, spec, hasTools);
}

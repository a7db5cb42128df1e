import { RateLimitError, type FlowProducer, type Job, type Queue } from 'bullmq';
import type OpenAI from 'openai';
import {
  agentTurnJobSchema,
  finishRun,
  lazyChild,
  runDeadline,
  AgentqError,
  RetryableError,
  isTerminal,
  toolMessage,
  type BudgetName,
  type ChatMessage,
  type JobLogger,
  type Logger,
  type RunState,
  type RunStore,
  type StepRecord,
  type ToolCatalogEntry,
} from '@agentq/shared';
import { exhaustedBudget } from './budgets.js';
import { decideNext, planStep } from './decide-next.js';
import { DeltaBuffer } from './delta-buffer.js';
import { fanOut } from './fan-out.js';
import { callModel } from './model-step.js';
import { parseStructuredOutput } from './structured-output.js';
import { offeredTools } from './tool-offer.js';

/** What the agent-turn processor works with; tests build it against a real Redis. */
export interface AgentTurnDeps {
  store: RunStore;
  flow: FlowProducer;
  openai: OpenAI;
  logger: Logger;
  webhookQueue?: Queue;
  /** The tool catalog, cached by the caller. */
  tools: () => Promise<ToolCatalogEntry[]>;
  modelTimeoutMs: number;
  /** Pauses the agent queue; set by the worker so a 429 slows the queue instead of burning attempts. */
  rateLimit?: (ms: number) => Promise<void>;
}

/** The tool messages of a finished round, in the order of the assistant's `tool_calls`. */
export function toolMessagesInCallOrder(prev: StepRecord, results: Map<number, { output: string }>): ChatMessage[] {
  return (prev.message.tool_calls ?? []).map((tc, i) =>
    toolMessage(tc.id, results.get(i)?.output ?? `Error executing ${tc.function.name}: the tool call failed and no result was recorded`),
  );
}

/** Runs ONE model step of a run: the heart of the durable loop. */
export async function processAgentTurn(job: Job, deps: AgentTurnDeps, signal?: AbortSignal): Promise<unknown> {
  const { runId, depth } = agentTurnJobSchema.parse(job.data);
  const log = lazyChild(deps.logger, { run_id: runId, job_id: job.id, depth });
  const turn = await deps.store.loadTurn(runId, depth);
  if (!turn) {
    log.warn('run not found (expired or deleted); dropping the turn');
    return { skipped: 'missing' };
  }
  const { run } = turn;
  if (isTerminal(run.status)) return { skipped: run.status };
  let messages = turn.messages;

  // Normally the round's last tool result has appended the tool messages; if a result is
  // missing (a tool job that failed for good), this turn appends them, with an error text there.
  const round = depth > 0 && !turn.toolMessagesAppended ? await deps.store.loadToolRound(runId, depth - 1) : null;
  if (round?.step) {
    const toolMessages = toolMessagesInCallOrder(round.step, round.results);
    if (await deps.store.appendToolMessages(run, depth - 1, toolMessages)) messages.push(...toolMessages);
    else {
      // Another delivery of this turn appended them first, or the run ended: read again.
      const again = await deps.store.loadTurn(runId, depth);
      if (!again || isTerminal(again.run.status)) return { skipped: again?.run.status ?? 'missing' };
      messages = again.messages;
    }
  }
  // Not awaited: commands on one connection keep their order, so `run.started` still lands
  // before the step's events; if it fails, the next turn (still seeing 'queued') tries again.
  if (run.status === 'queued') void deps.store.startRun(runId).catch((err: Error) => log.warn({ err: err.message }, 'could not mark the run started'));

  try {
    return await runStep(job, deps, run, depth, messages, turn.step, log, signal);
  } catch (err) {
    // Fatal errors end the run now; anything else (provider faults, a Redis blip) is retried.
    const final = (err instanceof AgentqError && !err.retryable) || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    if (signal?.aborted) {
      // Cancelled (the run has ended: nothing to do) or shutting down (another worker redoes it).
      const now = await deps.store.getState(runId);
      if (!now || isTerminal(now.status)) return { skipped: 'cancelled' };
      throw err;
    }
    if (err instanceof RetryableError && err.code === 'model_rate_limited' && deps.rateLimit) {
      const ms = Math.min(Math.max(err.retryAfterMs ?? 1000, 100), 60_000);
      log.warn({ retry_after_ms: ms }, 'model rate limited; pausing the agent queue');
      await deps.rateLimit(ms);
      throw new RateLimitError();
    }
    if (!final) {
      log.warn({ err: (err as Error).message, attempt: job.attemptsMade + 1 }, 'model step failed; will retry');
      throw err;
    }
    const code = err instanceof AgentqError ? err.code : 'internal_error';
    const message = err instanceof AgentqError ? err.message : `internal error in the agent worker: ${(err as Error).message}`;
    log.error({ err }, 'model step failed for good; the run fails');
    await finishRun(deps, runId, { status: 'failed', stopReason: 'error', error: { code, message } });
    return { failed: code };
  }
}

async function runStep(
  job: Job,
  deps: AgentTurnDeps,
  run: RunState,
  depth: number,
  messages: ChatMessage[],
  committed: StepRecord | null,
  log: JobLogger,
  signal?: AbortSignal,
) {
  const { spec } = run;
  const tools = offeredTools(await deps.tools(), spec);
  // max_total_tokens holds for the whole tree: a sub-run checks its root's usage_total.
  const treeTokens = spec.ancestors.length ? await deps.store.treeTokens(spec.ancestors[0]) : run.usageTotal.total_tokens;
  const budget = exhaustedBudget(spec, {
    depth,
    treeTokens,
    createdAtMs: Date.parse(run.createdAt),
    deadlineAtMs: spec.deadline_at,
    nowMs: Date.now(),
  });
  const plan = planStep(spec, budget, tools.length > 0);

  if (plan.kind === 'stop') {
    await finishRun(deps, run.id, { status: 'incomplete', stopReason: plan.budget });
    return { outcome: 'budget_exhausted', budget: plan.budget };
  }

  let step = committed;
  let callPlan = plan;
  if (!step) {
    const startedAt = new Date().toISOString();
    const deltas = new DeltaBuffer((text) => void deps.store.appendEvent(run.id, 'message.delta', { depth, text }).catch(() => {}));
    const call = (p: typeof plan, stepSignal?: AbortSignal) => {
      // Not awaited: commands on one connection keep their order, so this event still lands
      // before the step's deltas and its completion, without a round trip of its own.
      void deps.store.appendEvent(run.id, 'step.started', { depth, model: spec.model, tools_disabled: p.toolChoice === 'none' }).catch(() => {});
      return callModel(deps.openai, {
        model: spec.model,
        messages,
        tools,
        toolChoice: p.toolChoice,
        responseFormat: spec.response_format,
        signal: stepSignal,
        timeoutMs: deps.modelTimeoutMs,
        onDelta: (t) => deltas.push(t),
      });
    };
    // A step in flight at the run's deadline is abandoned, not waited for.
    const deadline = runDeadline(spec, Date.parse(run.createdAt));
    const deadlineSignal = deadline !== undefined && !plan.budget ? AbortSignal.timeout(Math.max(1, deadline - Date.now())) : undefined;
    let response;
    try {
      response = await call(plan, deadlineSignal && signal ? AbortSignal.any([signal, deadlineSignal]) : (deadlineSignal ?? signal));
    } catch (err) {
      if (!deadlineSignal?.aborted || signal?.aborted) throw err;
      deltas.flush();
      log.info('deadline passed during the model step');
      if (spec.on_budget_exhausted === 'stop') {
        await finishRun(deps, run.id, { status: 'incomplete', stopReason: 'timeout' });
        return { outcome: 'budget_exhausted', budget: 'timeout' };
      }
      callPlan = { kind: 'call', toolChoice: tools.length > 0 ? 'none' : 'absent', budget: 'timeout', stopIfTools: false };
      response = await call(callPlan, signal);
    }
    deltas.flush();
    const record: StepRecord = {
      depth,
      status: 'completed',
      model: spec.model,
      usage: response.usage,
      started_at: startedAt,
      completed_at: new Date().toISOString(),
      message: response.message,
      ...(callPlan.budget && callPlan.toolChoice !== 'auto' ? { budget: callPlan.budget } : {}),
    };
    step = await deps.store.commitStep(run, record, {
      depth,
      usage: record.usage,
      finish_reason: response.finishReason,
      content: record.message.content,
      tool_calls: (record.message.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, arguments: t.function.arguments })),
    });
    if (!step) return { skipped: 'ended during the step' };
    log.debug({ usage: step.usage, tool_calls: step.message.tool_calls?.length ?? 0 }, 'model step done');
  } else if (step.budget && !plan.budget) {
    // A redelivered step that was made as a final call keeps the plan it was made under.
    callPlan = { kind: 'call', toolChoice: 'none', budget: step.budget as BudgetName, stopIfTools: false };
  }

  const outcome = decideNext(callPlan, step.message);
  switch (outcome.kind) {
    case 'tool_calls':
      await fanOut(deps.flow, run.id, depth, outcome.toolCalls, spec.parent_job);
      return { outcome: 'tool_calls', count: outcome.toolCalls.length };
    case 'budget_exhausted':
      await finishRun(deps, run.id, { status: 'incomplete', stopReason: outcome.budget, output: step.message });
      return { outcome: 'budget_exhausted', budget: outcome.budget };
    case 'final_answer': {
      const output = { role: 'assistant' as const, content: step.message.content ?? '', ...(step.message.refusal ? { refusal: step.message.refusal } : {}) };
      let outputParsed: unknown;
      try {
        outputParsed = parseStructuredOutput(spec.response_format, step.message.content);
      } catch (err) {
        const e = err as AgentqError;
        await finishRun(deps, run.id, { status: 'failed', stopReason: 'error', output, error: { code: e.code, message: e.message } });
        return { outcome: 'failed', code: e.code };
      }
      await finishRun(deps, run.id, { status: 'completed', stopReason: outcome.stopReason, output, outputParsed });
      return { outcome: 'final_answer' };
    }
  }
}

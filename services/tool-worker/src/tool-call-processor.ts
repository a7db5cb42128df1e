import {
  AgentqError,
  ASK_HUMAN_TOOL,
  BUILTIN_TOOL_NAMES,
  compileAllowlist,
  isTerminal,
  modelText,
  parseArguments,
  runDeadline,
  toolFailed,
  type ToolOutcome,
} from '@agentq/shared/core';
import { lazyChild, type Logger } from '@agentq/shared/infra';
import { eventOutput, type RunStore, type ToolResultRecord } from '@agentq/shared/store';
import { type JobContext, type ToolCallsJob } from '@agentq/shared/jobs';
import { type RunActions, type Runs } from '@agentq/shared/runs';
import type { ToolDescriptor } from './mcp-tools.js';
import type { RunSpecCache } from './run-spec-cache.js';
import { awaitedAnswer } from './awaited-answer.js';
import { runAgentQuery } from './builtin/agent-query.js';
import { runContextTool } from './builtin/context-tools.js';
import type { SearchThreads } from './builtin/search-threads.js';
import { maySendAgain, unknownOutcome } from './rerun-rule.js';
import { capToolOutput } from './tool-output.js';

const DEADLINE_PASSED = "the run's deadline (timeout_ms) passed before the call started";

/** The part of the MCP registry a tool call needs. */
export interface ToolRunner {
  tools(): ToolDescriptor[];
  /**
   * Runs an MCP tool within `timeoutMs` (unless its server sets its own) and never past
   * `deadline`; throws a retryable error only when sending the call again is safe.
   */
  call(
    name: string,
    rawArguments: string,
    opts: { timeoutMs: number; deadline?: number; signal?: AbortSignal },
  ): Promise<ToolOutcome>;
}

/** One call of a tool-calls job, with what the job carries for all its calls. */
export type RoundCall = Omit<ToolCallsJob, 'kind' | 'calls'> & ToolCallsJob['calls'][number];

/** The call of a job's `calls` at `i`, with what the job carries for all of them. */
export function roundCall(data: ToolCallsJob, i: number): RoundCall {
  const { kind: _kind, calls, ...shared } = data;
  return { ...shared, ...calls[i]! };
}

export interface ToolCallDeps {
  store: RunStore;
  runs: Runs;
  /** Decisions on requests for an answer (a call that waited acts on its decision). */
  actions: RunActions;
  /** The longest a waiting call's job stays parked at once (ACTION_PARK_MAX_MS). */
  actionParkMs: number;
  runner: ToolRunner;
  logger: Logger;
  toolTimeoutMs: number;
  outputMaxBytes: number;
  /** Where context_search runs callers' patterns: off the event loop, with a deadline. */
  searchThreads: SearchThreads;
  /** The specs of runs this worker began calls of: a run's next round does not read its spec. */
  specs?: RunSpecCache;
  /** How long a call that waits on its sub-runs stays parked before it looks at them again. */
  subrunRecheckMs: number;
}

/** What a call comes to; `record` is for the worker's telemetry, not for BullMQ. */
export interface ToolCallResult {
  index: number;
  skipped?: string;
  record?: ToolResultRecord;
  /** This call's result completed its round: the next step is due. */
  roundComplete?: boolean;
}

/**
 * Runs one tool call and stores its result under the call. Tool failures are results the
 * model sees, never job failures; only a call that provably never started (or whose tool is
 * idempotent) is retried when its server is unreachable, and after the last attempt it too
 * becomes an error result, so the next step is always released.
 */
export async function processToolCall(data: RoundCall, ctx: JobContext, deps: ToolCallDeps): Promise<ToolCallResult> {
  const { job, signal } = ctx;
  const { runId, depth, index, name } = data;
  const log = lazyChild(deps.logger, { run_id: runId, job_id: job.id, depth, tool: name });

  // A call that waited for an answer acts on the decision stored: it runs (with the arguments
  // approved), or its result is the decision's (a rejection, an output, an answer, an expiry).
  let args = data.arguments;
  let decided: ToolOutcome | undefined;
  let edited = false;
  if (data.actionId) {
    const answer = await awaitedAnswer(data.actionId, runId, ctx, {
      store: deps.store,
      runs: deps.runs,
      actions: deps.actions,
      parkMs: deps.actionParkMs,
    });
    if (answer.kind === 'skip') return { index, skipped: answer.why };
    if (answer.kind === 'result') decided = answer.outcome;
    else ({ arguments: args, edited } = answer);
  }

  // attemptsStarted counts stalled restarts too (a crash is not a failed attempt for BullMQ).
  const attempt = Math.max(job.attemptsStarted ?? 0, job.attemptsMade + 1);
  // A sub-agent call resumed once its sub-runs ended lasted from its first start to now.
  const resumed = Boolean(data.subrunIds);
  const started = resumed ? (data.startedAt ?? job.processedOn ?? job.timestamp) : Date.now();
  const startedAt = new Date(started).toISOString();
  const startEvent = resumed || decided ? undefined : { depth, index, tool_call_id: data.toolCallId, name, attempt };
  // One round trip: a finished result is never executed again (at-least-once delivery,
  // at-most-once result); a run that has ended, or whose ancestor has, runs nothing; else the
  // attempt is marked running.
  const begun = await deps.store.toolCalls.begin(runId, depth, index, attempt, {
    ancestors: data.ancestors,
    event: startEvent,
    held: deps.specs?.get(runId),
  });
  if (begun.kind === 'done') return { index, skipped: 'done before' };
  if (begun.kind === 'ended') {
    deps.specs?.delete(runId);
    // An ancestor has ended (the tree was cancelled): so does this run, and nothing starts.
    if (begun.ancestorOver) await deps.runs.finish(runId, { status: 'cancelled', stopReason: 'cancelled' });
    return { index, skipped: begun.ancestorOver ? 'ancestor ended' : (begun.run?.status ?? 'missing') };
  }
  const { run, interrupted } = begun;
  deps.specs?.set(runId, { createdAt: run.createdAt, spec: begun.spec });
  const deadline = runDeadline(run.spec, Date.parse(run.createdAt));
  const tool = deps.runner.tools().find((t) => t.name === name);

  let outcome: ToolOutcome;
  let subrunIds: string[] | undefined;
  if (decided) outcome = decided;
  // Past the run's tool_limits: not made; the model reads why.
  else if (data.refused) outcome = toolFailed('refused', data.refused);
  else if (name === ASK_HUMAN_TOOL.name) {
    // A readable question waits for its answer (see gate.ts); this one did not.
    outcome = run.spec.human_input
      ? toolFailed('invalid_arguments', 'ask_human takes {"question": string, "choices"?: [string, …]}')
      : toolFailed('refused', 'this run does not take questions to the user (human_input is off)');
  } else if (BUILTIN_TOOL_NAMES.has(name) && !resumed && deadline !== undefined && deadline <= Date.now()) {
    // A sub-agent call that starts late (behind a busy queue) makes no sub-runs past the deadline;
    // one that made them before it comes back for their results.
    outcome = toolFailed('refused', DEADLINE_PASSED);
  } else if (BUILTIN_TOOL_NAMES.has(name)) {
    // Built-in tools are safe to run again: their effects (sub-runs) have ids fixed by the job.
    const parsed = parseArguments(args);
    if (typeof parsed === 'string') outcome = toolFailed('invalid_arguments', parsed);
    else if (name.startsWith('context_')) {
      // A search gets the time any tool call gets, and no more than the run has left.
      const timeoutMs = Math.max(
        1,
        Math.min(deps.toolTimeoutMs, deadline !== undefined ? deadline - Date.now() : Infinity),
      );
      outcome = await runContextTool(name, parsed, runId, deps.store.contexts, {
        threads: deps.searchThreads,
        timeoutMs,
      });
    } else ({ outcome, subrunIds } = await runAgentQuery(ctx, data, parsed, run, deps));
  } else if (!compileAllowlist(run.spec.tools)(name)) {
    outcome = toolFailed(
      'refused',
      `this tool is not allowed for this run (allowed: ${run.spec.tools?.join(', ') ?? 'all'})`,
    );
  } else if (interrupted && !maySendAgain('lost', tool)) {
    // A previous attempt started this call and never reported back (a crash): it may have had its effect.
    outcome = unknownOutcome('a worker stopped while this call was running');
  } else if (deadline !== undefined && deadline <= Date.now()) {
    outcome = toolFailed('refused', DEADLINE_PASSED);
  } else {
    try {
      // A call in flight at the run's deadline is abandoned, not waited for (the registry takes
      // the earlier of the deadline and the call's timeout).
      outcome = await deps.runner.call(name, args, { timeoutMs: deps.toolTimeoutMs, deadline, signal });
    } catch (err) {
      if (signal?.aborted) {
        const now = await deps.store.runs.getState(runId);
        if (!now || isTerminal(now.status)) return { index, skipped: 'cancelled' };
        throw err;
      }
      const retryable = err instanceof AgentqError && err.retryable;
      if (retryable && attempt < (job.opts.attempts ?? 1)) {
        // Thrown only when sending again is safe (the request never left, or the tool is
        // idempotent): the next attempt must not be taken for a rerun of an interrupted call.
        await deps.store.toolCalls.clearRunning(runId, depth, index);
        log.warn({ err: (err as Error).message, attempt }, 'tool server unavailable; will retry');
        throw err;
      }
      outcome = toolFailed('unavailable', (err as Error).message);
    }
  }

  // The model asked with other arguments: it is told what the call ran with.
  if (edited && (outcome.kind === 'ok' || outcome.kind === 'tool_error'))
    outcome = {
      ...outcome,
      text: `(The user edited the arguments before the call ran; it ran with ${args}.)\n${outcome.text}`,
    };
  const isError = outcome.kind !== 'ok';
  const rec: ToolResultRecord = {
    id: data.toolCallId,
    name,
    status: isError ? 'failed' : 'completed',
    outcome: outcome.kind,
    output: capToolOutput(modelText(name, outcome), deps.outputMaxBytes),
    is_error: isError,
    attempts: attempt,
    duration_ms: Date.now() - started,
    started_at: startedAt,
    completed_at: new Date().toISOString(),
    ...(subrunIds ? { subrun_ids: subrunIds } : {}),
  };
  const event = {
    depth,
    index,
    tool_call_id: data.toolCallId,
    name,
    is_error: rec.is_error,
    duration_ms: rec.duration_ms,
    outcome: outcome.kind,
    ...eventOutput(rec.output),
  };
  // Stored before the job goes on: a result Redis refused fails the job's attempt, and the retry
  // finds the call begun and redoes it, or reports it unknown_outcome if it may not run twice.
  const { roundComplete } = await deps.store.toolCalls.complete(runId, depth, index, rec, event, {
    count: data.count,
    ancestors: data.ancestors ?? [],
  });
  log.debug({ outcome: rec.outcome, duration_ms: rec.duration_ms }, 'tool call done');
  return { index, record: rec, roundComplete };
}

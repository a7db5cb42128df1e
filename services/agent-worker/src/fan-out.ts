import { SUBAGENT_TOOL_NAMES, type ToolCall } from '@agentq/shared/core';
import { activeTrace, nextStepTrace } from '@agentq/shared/infra';
import { type RunState, type ToolCatalogEntry } from '@agentq/shared/store';
import { type JobInput, type JobQueues } from '@agentq/shared/jobs';
import { requestsOf, type RunActions } from '@agentq/shared/runs';

/** What a fan-out needs: the queues, and (for runs that may wait) the requests and the tool catalog. */
export interface FanOutDeps {
  jobs: JobQueues;
  actions: RunActions;
  catalog: ToolCatalogEntry[];
  /** The longest a waiting job stays delayed at once (a request without expiry). */
  parkMs: number;
}

/** True when a run's calls may have to wait for an answer (its spec asks for it). */
const mayWait = (run: RunState) => Boolean(run.spec.approval || run.spec.client_tools || run.spec.human_input);

/**
 * Adds a step's tool calls as jobs of the tool queue: the calls that only run share one job; a
 * call that waits for an answer, and a sub-agent call (which waits on the sub-runs it starts),
 * gets a job of its own, since its job's life is that wait's. Each call is begun, run and stored
 * on its own, in parallel; the job that stores the round's last result enqueues the next step
 * (the tool-worker's next-step.ts), which is how every round ends. Ids derive from run, depth and
 * call, so a step that is redone adds nothing twice.
 *
 * A call that needs an answer (approval, a client tool, a question) has its request stored
 * first, and its job is added delayed until the request expires: it holds nothing while it
 * waits, and an answer promotes it. The round's other calls run at once.
 */
export async function fanOut(
  deps: FanOutDeps,
  run: RunState,
  depth: number,
  toolCalls: ToolCall[],
  transcriptBytes?: number,
  /** For each call, why the run's tool_limits refuse it (it is not made, nor asked about), if they do. */
  refused: Array<string | undefined> = [],
): Promise<void> {
  const requests = (mayWait(run) ? requestsOf(run, depth, toolCalls, deps.catalog) : []).map((r, i) =>
    refused[i] ? null : r,
  );
  const waiting = requests.filter((r) => r !== null);
  if (waiting.length) await deps.actions.require(run, waiting);
  const now = Date.now();
  const startsSubruns = toolCalls.some((tc) => SUBAGENT_TOOL_NAMES.has(tc.function.name));
  const shared = {
    runId: run.id,
    depth,
    count: toolCalls.length,
    // A sub-run's calls check its ancestors before they start (a cancel of the tree).
    ...(run.spec.ancestors.length ? { ancestors: run.spec.ancestors } : {}),
    // Trace contexts (when tracing is on): the calls join this step's span, the next step the run's trace.
    ...activeTrace(),
    nextStep: {
      ...nextStepTrace(),
      // The next step is told the transcript's size as this step read it (see AgentStepJob).
      ...(transcriptBytes !== undefined ? { transcriptBytes } : {}),
      ...(startsSubruns ? { resumes: true } : {}),
    },
  };
  const call = (index: number) => {
    const tc = toolCalls[index]!;
    const why = refused[index];
    return {
      index,
      toolCallId: tc.id,
      name: tc.function.name,
      arguments: tc.function.arguments,
      ...(why ? { refused: why } : {}),
    };
  };
  const ownJob = (index: number) =>
    Boolean(requests[index]) || (!refused[index] && SUBAGENT_TOOL_NAMES.has(toolCalls[index]!.function.name));
  const indexes = toolCalls.map((_, index) => index);
  const together = indexes.filter((index) => !ownJob(index));
  const jobs: Array<{ data: JobInput<'toolCalls'>; delay?: number }> = [];
  if (together.length) jobs.push({ data: { ...shared, calls: together.map(call) } });
  for (const index of indexes.filter(ownJob)) {
    const request = requests[index];
    const expires = request?.expires_at ? Date.parse(request.expires_at) - now : Infinity;
    jobs.push({
      data: { ...shared, calls: [call(index)], ...(request ? { actionId: request.id } : {}) },
      ...(request ? { delay: Math.max(1, Math.min(expires, deps.parkMs)) } : {}),
    });
  }
  await deps.jobs.enqueueMany('toolCalls', jobs);
  // The requests were visible (and answerable) before their jobs existed.
  if (waiting.length)
    await deps.actions.wakeAnsweredEarly(
      run,
      waiting.map((r) => r.id),
    );
}

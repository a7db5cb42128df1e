import {
  activeTrace,
  nextStepTrace,
  requestsOf,
  SUBAGENT_TOOL_NAMES,
  type FlowNode,
  type JobData,
  type JobQueues,
  type RunActions,
  type RunState,
  type ToolCall,
  type ToolCatalogEntry,
} from '@agentq/shared';

/** What a fan-out needs: the queues, and (for runs that may wait) the requests and the tool catalog. */
export interface FanOutDeps {
  jobs: JobQueues;
  actions: RunActions;
  catalog: ToolCatalogEntry[];
  /** The longest a waiting job stays delayed at once (a request without expiry). */
  parkMs: number;
  /** A round's calls that only run share one tool-round job (TOOL_ROUND_JOBS); else one job each. */
  roundJobs: boolean;
}

/** True when a run's calls may have to wait for an answer (its spec asks for it). */
const mayWait = (run: RunState) => Boolean(run.spec.approval || run.spec.client_tools || run.spec.human_input);

/**
 * Adds a step's tool calls as jobs that start the next step once every result is in. A round
 * that is one job of calls that only run (most rounds) is added alone, and that job adds the
 * next step when its calls are stored (the tool-worker's next-steps.ts). Any other round is one
 * flow: the next step is the parent, the round's tool jobs its children, and BullMQ keeps the
 * parent in waiting-children until the last child ends. Ids derive from run and depth, so a step
 * that is redone adds nothing twice.
 *
 * The calls that only run (most of them) share one tool-round job when there are two or more:
 * a job costs Redis more than the call's own writes (adding it, taking it, completing it and
 * releasing its parent are four scripts), so a round of three such calls costs one job instead
 * of three. Each call is still begun, run and stored on its own, in parallel. A call that waits
 * for an answer, and a sub-agent call (which waits for its sub-runs in its job), gets a job of
 * its own.
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
): Promise<void> {
  const requests = mayWait(run) ? requestsOf(run, depth, toolCalls, deps.catalog) : [];
  const waiting = requests.filter((r) => r !== null);
  if (waiting.length) await deps.actions.require(run, waiting);
  const now = Date.now();
  // Trace contexts (when tracing is on): the next step joins the run's trace, the tool calls this step's span.
  const trace = activeTrace();
  const shared = {
    runId: run.id,
    depth,
    count: toolCalls.length,
    // A sub-run's calls check its ancestors before they start (a cancel of the tree).
    ...(run.spec.ancestors.length ? { ancestors: run.spec.ancestors } : {}),
    ...trace,
  };
  const call = (tc: ToolCall, index: number) => ({
    index,
    toolCallId: tc.id,
    name: tc.function.name,
    arguments: tc.function.arguments,
  });
  const ownJob = (index: number) =>
    Boolean(requests[index]) || SUBAGENT_TOOL_NAMES.has(toolCalls[index]!.function.name);
  const together = deps.roundJobs ? toolCalls.map((_, index) => index).filter((index) => !ownJob(index)) : [];
  const inRound = new Set(together.length >= 2 ? together : []);
  const children: FlowNode[] = [];
  if (inRound.size)
    children.push({
      kind: 'toolRound',
      data: { ...shared, calls: together.map((index) => call(toolCalls[index]!, index)) },
    });
  toolCalls.forEach((tc, index) => {
    if (inRound.has(index)) return;
    const request = requests[index];
    const expires = request?.expires_at ? Date.parse(request.expires_at) - now : Infinity;
    children.push({
      kind: 'toolCall',
      data: { ...shared, ...call(tc, index), ...(request ? { actionId: request.id } : {}) },
      ...(request ? { delay: Math.max(1, Math.min(expires, deps.parkMs)) } : {}),
    });
  });
  // A round that is one job of calls that only run: that job adds the next step itself once its
  // calls are stored, with no flow to wait on (a flow's parent, its bookkeeping and its release
  // cost Redis about a fifth of a round's queue work). Not for a call that waits for an answer or
  // on sub-runs (its job's life is theirs), nor in a sub-run, whose steps are children of the job
  // that started it (below); and not with TOOL_ROUND_JOBS off (tool-workers of before).
  const lone = children.length === 1 && deps.roundJobs && !run.spec.parent_job && (inRound.size > 0 || !ownJob(0));
  // The next step is told the transcript's size as this step read it (see AgentStepJob).
  const told = transcriptBytes !== undefined ? { transcriptBytes } : {};
  if (lone) {
    const nextStep = { ...nextStepTrace(), ...told };
    const only = children[0]!;
    if (only.kind === 'toolRound')
      await deps.jobs.enqueue('toolRound', { ...(only.data as JobData<'toolRound'>), nextStep });
    else await deps.jobs.enqueue('toolCall', { ...(only.data as JobData<'toolCall'>), nextStep });
    return;
  }
  await deps.jobs.addFlow({
    kind: 'agentStep',
    data: { runId: run.id, depth: depth + 1, ...nextStepTrace(), ...told },
    // A sub-run's every step is a child of the tool job that started it, so that job waits
    // (holding no worker slot) through the sub-run's whole chain and resumes once, at its end.
    parent: run.spec.parent_job,
    children,
  });
  // The requests were visible (and answerable) before their jobs existed.
  if (waiting.length)
    await deps.actions.wakeAnsweredEarly(
      run,
      waiting.map((r) => r.id),
    );
}

import { activeTrace, nextStepTrace, type JobQueues, type RunState, type ToolCall } from '@agentq/shared';

/**
 * Adds one flow for a step's tool calls: the next step is the parent, one tool job per call
 * its children. BullMQ keeps the parent in waiting-children until the last child ends, so the
 * next model step starts only when every result is in. Ids derive from run and depth, so a
 * step that is redone adds nothing twice.
 */
export async function fanOut(jobs: JobQueues, run: RunState, depth: number, toolCalls: ToolCall[]): Promise<void> {
  // Trace contexts (when tracing is on): the next step joins the run's trace, the tool calls this step's span.
  const trace = activeTrace();
  await jobs.addFlow({
    kind: 'agentStep',
    data: { runId: run.id, depth: depth + 1, ...nextStepTrace() },
    // A sub-run's every step is a child of the tool job that started it, so that job waits
    // (holding no worker slot) through the sub-run's whole chain and resumes once, at its end.
    parent: run.spec.parent_job,
    children: toolCalls.map((tc, index) => ({
      kind: 'toolCall' as const,
      data: {
        runId: run.id,
        depth,
        index,
        toolCallId: tc.id,
        name: tc.function.name,
        arguments: tc.function.arguments,
        count: toolCalls.length,
        // A sub-run's calls check its ancestors before they start (a cancel of the tree).
        ...(run.spec.ancestors.length ? { ancestors: run.spec.ancestors } : {}),
        ...trace,
      },
    })),
  });
}

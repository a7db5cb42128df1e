import type { FlowProducer } from 'bullmq';
import { QUEUES, activeTrace, jobIds, jobNames, jobOptions, nextTurnTrace, type AgentTurnJob, type ToolCall, type ToolCallJob } from '@agentq/shared';

/**
 * Adds one flow for a step's tool calls: the next turn is the parent, one tool job per call
 * its children. BullMQ keeps the parent in waiting-children until the last child ends, so the
 * next model step starts only when every result is in. Ids derive from run and depth, so a
 * step that is redone adds nothing twice.
 */
export async function fanOut(flow: FlowProducer, runId: string, depth: number, toolCalls: ToolCall[], parentJob?: { id: string; queue: string }): Promise<void> {
  // Trace contexts (when tracing is on): the next turn joins the run's trace, the tool calls this turn's span.
  const next: AgentTurnJob = { runId, depth: depth + 1, ...nextTurnTrace() };
  const trace = activeTrace();
  await flow.add({
    name: jobNames.agentTurn(runId, depth + 1),
    queueName: QUEUES.agent,
    data: next,
    // A sub-run's every turn is a child of the tool job that started it, so that job waits
    // (holding no worker slot) through the sub-run's whole chain and resumes once, at its end.
    opts: { ...jobOptions.agentTurn, jobId: jobIds.agentTurn(runId, depth + 1), ...(parentJob ? { parent: parentJob, ignoreDependencyOnFailure: true } : {}) },
    children: toolCalls.map((tc, index) => {
      const data: ToolCallJob = { runId, depth, index, toolCallId: tc.id, name: tc.function.name, arguments: tc.function.arguments, count: toolCalls.length, ...trace };
      return {
        name: jobNames.toolCall(runId, depth, tc.function.name),
        queueName: QUEUES.tool,
        data,
        opts: { ...jobOptions.toolCall, jobId: jobIds.toolCall(runId, depth, index) },
      };
    }),
  });
}

import type { Job } from 'bullmq';
import { AGENTQ, GEN_AI, SpanStatusCode, withJobSpan, type AgentqMetrics, type ToolResultRecord } from '@agentq/shared';
import type { ToolCallJobResult } from './tool-call-processor.js';

/** How a stored tool call ended, for metrics and spans. */
export type ToolOutcome = 'ok' | 'error' | 'timeout';

// The wording of a timed-out call: the MCP request timeout (mcp-registry) or the run's deadline (tool-call-processor).
const TIMED_OUT = /^Error executing [^:]*: (timed out after \d+ ms|abandoned at the run's deadline)/;

/** Classifies a stored result: `ok`, `timeout`, or `error` (any other error result the model sees). */
export function toolOutcome(rec: Pick<ToolResultRecord, 'is_error' | 'output'>): ToolOutcome {
  if (!rec.is_error) return 'ok';
  return TIMED_OUT.test(rec.output) ? 'timeout' : 'error';
}

export interface ToolTelemetryDeps {
  metrics: AgentqMetrics;
  /** Names the model invents are counted as `unknown`, so they cannot grow the series. */
  isKnownTool: (name: string) => boolean;
}

/**
 * Runs one tool-call job in an `execute_tool <tool>` span (GenAI semantic conventions), a
 * child of the turn that asked for it, and counts the call once its result is sent to the store
 * (the processor hands that record over; it is not kept in the job's return value).
 * Attempts that stored nothing (skipped, waiting for sub-runs, retried) count nothing.
 */
export function traceToolCall(job: Job, deps: ToolTelemetryDeps, fn: () => Promise<ToolCallJobResult>): Promise<Omit<ToolCallJobResult, 'record'>> {
  const data = job.data as { runId: string; depth: number; index: number; toolCallId?: string; name?: string; traceparent?: string };
  const name = String(data.name);
  return withJobSpan(
    `execute_tool ${name}`,
    {
      carrier: { traceparent: data.traceparent },
      attributes: {
        [GEN_AI.operationName]: 'execute_tool',
        [GEN_AI.toolName]: name,
        [GEN_AI.toolCallId]: String(data.toolCallId),
        [GEN_AI.toolType]: 'function',
        [AGENTQ.runId]: String(data.runId),
        [AGENTQ.depth]: Number(data.depth),
        [AGENTQ.jobId]: String(job.id),
        [AGENTQ.attempt]: job.attemptsMade + 1,
      },
    },
    async (span) => {
      const { record: rec, ...result } = await fn();
      if (result.skipped) {
        span.setAttribute(AGENTQ.outcome, `skipped: ${result.skipped}`);
        return result;
      }
      if (!rec) return result;
      const outcome = toolOutcome(rec);
      const tool = deps.isKnownTool(name) ? name : 'unknown';
      deps.metrics.toolCalls.inc({ tool, outcome });
      deps.metrics.toolCallDuration.observe({ tool }, rec.duration_ms / 1000);
      span.setAttribute(AGENTQ.outcome, outcome);
      if (outcome !== 'ok') {
        span.setAttribute('error.type', outcome === 'timeout' ? 'timeout' : 'tool_error');
        span.setStatus({ code: SpanStatusCode.ERROR, message: rec.output.slice(0, 200) });
      }
      return result;
    },
  );
}

import type { Job } from 'bullmq';
import { type ToolOutcomeKind } from '@agentq/shared/core';
import { AGENTQ, GEN_AI, SpanStatusCode, withJobSpan, type AgentqMetrics } from '@agentq/shared/infra';
import type { RoundCall, ToolCallResult } from './tool-call-processor.js';

/** The coarse `outcome` label of the tool metrics (kept as documented): ok, timeout, or any other error. */
export function metricOutcome(kind: ToolOutcomeKind): 'ok' | 'error' | 'timeout' {
  return kind === 'ok' || kind === 'timeout' ? kind : 'error';
}

export interface ToolTelemetryDeps {
  metrics: AgentqMetrics;
  /** Names the model invents are counted as `unknown`, so they cannot grow the series. */
  isKnownTool: (name: string) => boolean;
}

/**
 * Runs one tool-call job in an `execute_tool <tool>` span (GenAI semantic conventions), a
 * child of the step that asked for it, and counts the call once its result is sent to the store
 * (the processor hands that record over; it is not kept in the job's return value).
 * Attempts that stored nothing (skipped, waiting for sub-runs, retried) count nothing.
 */
export function traceToolCall(
  data: RoundCall,
  job: Job,
  deps: ToolTelemetryDeps,
  fn: () => Promise<ToolCallResult>,
): Promise<Omit<ToolCallResult, 'record'>> {
  const name = data.name;
  return withJobSpan(
    `execute_tool ${name}`,
    {
      carrier: { traceparent: data.traceparent },
      attributes: {
        [GEN_AI.operationName]: 'execute_tool',
        [GEN_AI.toolName]: name,
        [GEN_AI.toolCallId]: data.toolCallId,
        [GEN_AI.toolType]: 'function',
        [AGENTQ.runId]: data.runId,
        [AGENTQ.depth]: data.depth,
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
      const kind = rec.outcome;
      const outcome = metricOutcome(kind);
      const tool = deps.isKnownTool(name) ? name : 'unknown';
      deps.metrics.toolCalls.inc({ tool, outcome, kind });
      deps.metrics.toolCallDuration.observe({ tool }, rec.duration_ms / 1000);
      span.setAttribute(AGENTQ.outcome, kind);
      if (outcome !== 'ok') {
        span.setAttribute('error.type', kind);
        span.setStatus({ code: SpanStatusCode.ERROR, message: rec.output.slice(0, 200) });
      }
      return result;
    },
  );
}

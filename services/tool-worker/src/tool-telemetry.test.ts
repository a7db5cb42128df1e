import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { type ToolOutcomeKind } from '@agentq/shared/core';
import { createMetrics } from '@agentq/shared/infra';
import { type ToolResultRecord } from '@agentq/shared/store';
import type { RoundCall } from './tool-call-processor.js';
import { metricOutcome, traceToolCall } from './tool-telemetry.js';

const rec = (outcome: ToolOutcomeKind, output: string, duration_ms = 120) =>
  ({ outcome, is_error: outcome !== 'ok', output, duration_ms }) as ToolResultRecord;

describe('metricOutcome', () => {
  it('keeps the documented coarse label: ok, timeout, and error for every other failure', () => {
    expect(metricOutcome('ok')).toBe('ok');
    expect(metricOutcome('timeout')).toBe('timeout');
    for (const kind of [
      'tool_error',
      'server_error',
      'refused',
      'unknown_outcome',
      'unavailable',
      'invalid_arguments',
    ] as const)
      expect(metricOutcome(kind)).toBe('error');
  });
});

describe('traceToolCall', () => {
  const data: RoundCall = {
    runId: 'run_1',
    depth: 0,
    count: 1,
    nextStep: {},
    index: 0,
    toolCallId: 'call_1',
    name: 'crm__x',
    arguments: '{}',
  };
  const job = { id: 'run_1-t0-c0', attemptsMade: 0 } as unknown as Job;

  async function count(metrics: ReturnType<typeof createMetrics>) {
    const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === 'agentq_tool_calls_total');
    return m?.values.map((v) => [v.labels.tool, v.labels.outcome, v.labels.kind, v.value]);
  }

  it('counts a stored result once, by tool, outcome and kind, read from the record (not parsed from its text)', async () => {
    const metrics = createMetrics({ service: 'tool-worker', processMetrics: false });
    const deps = { metrics, isKnownTool: () => true };
    // The text says nothing of a timeout: the kind alone decides.
    const returned = await traceToolCall(data, job, deps, async () => ({
      index: 0,
      record: rec('timeout', 'Error executing crm__x: gave up'),
    }));
    expect(await count(metrics)).toEqual([['crm__x', 'timeout', 'timeout', 1]]);
    // The record is for telemetry only: BullMQ does not keep the output a second time.
    expect(returned).toEqual({ index: 0 });
  });

  it('counts nothing for an attempt that stored nothing (a redelivery, a cancelled run)', async () => {
    const metrics = createMetrics({ service: 'tool-worker', processMetrics: false });
    const deps = { metrics, isKnownTool: () => true };
    await traceToolCall(data, job, deps, async () => ({ index: 0, skipped: 'done before' }));
    expect(await count(metrics)).toEqual([]);
  });

  it('counts a tool the model invented as "unknown"', async () => {
    const metrics = createMetrics({ service: 'tool-worker', processMetrics: false });
    const deps = { metrics, isKnownTool: () => false };
    await traceToolCall(data, job, deps, async () => ({
      index: 0,
      record: rec('refused', 'Error executing crm__x: unknown tool'),
    }));
    expect(await count(metrics)).toEqual([['unknown', 'error', 'refused', 1]]);
  });
});

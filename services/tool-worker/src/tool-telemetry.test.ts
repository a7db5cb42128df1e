import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { createMetrics, type ToolResultRecord } from '@agentq/shared';
import { toolOutcome, traceToolCall } from './tool-telemetry.js';

const rec = (is_error: boolean, output: string, duration_ms = 120) => ({ is_error, output, duration_ms }) as ToolResultRecord;

describe('toolOutcome', () => {
  it('tells ok, timeouts and other errors apart', () => {
    expect(toolOutcome(rec(false, 'timed out after 5 ms is just text here'))).toBe('ok');
    expect(toolOutcome(rec(true, 'Error executing crm__sleep: timed out after 300 ms'))).toBe('timeout');
    expect(toolOutcome(rec(true, "Error executing crm__sleep: abandoned at the run's deadline (timeout_ms)"))).toBe('timeout');
    expect(toolOutcome(rec(true, 'Error executing crm__fail: the CRM is on fire'))).toBe('error');
  });
});

describe('traceToolCall', () => {
  const job = { id: 'run_1-t0-c0', attemptsMade: 0, data: { runId: 'run_1', depth: 0, index: 0, toolCallId: 'call_1', name: 'crm__x' } } as unknown as Job;

  async function count(metrics: ReturnType<typeof createMetrics>) {
    const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === 'agentq_tool_calls_total');
    return m?.values.map((v) => [v.labels.tool, v.labels.outcome, v.value]);
  }

  it('counts a stored result once, by tool and outcome', async () => {
    const metrics = createMetrics({ service: 'tool-worker', processMetrics: false });
    const deps = { metrics, isKnownTool: () => true };
    const returned = await traceToolCall(job, deps, async () => ({ index: 0, record: rec(true, 'Error executing crm__x: timed out after 10 ms') }));
    expect(await count(metrics)).toEqual([['crm__x', 'timeout', 1]]);
    // The record is for telemetry only: BullMQ does not keep the output a second time.
    expect(returned).toEqual({ index: 0 });
  });

  it('counts nothing for an attempt that stored nothing (a redelivery, a cancelled run)', async () => {
    const metrics = createMetrics({ service: 'tool-worker', processMetrics: false });
    const deps = { metrics, isKnownTool: () => true };
    await traceToolCall(job, deps, async () => ({ index: 0, skipped: 'done before' }));
    expect(await count(metrics)).toEqual([]);
  });

  it('counts a tool the model invented as "unknown"', async () => {
    const metrics = createMetrics({ service: 'tool-worker', processMetrics: false });
    const deps = { metrics, isKnownTool: () => false };
    await traceToolCall(job, deps, async () => ({ index: 0, record: rec(true, 'Error executing crm__x: unknown tool') }));
    expect(await count(metrics)).toEqual([['unknown', 'error', 1]]);
  });
});

import type { Queue } from 'bullmq';
import { describe, expect, it, vi } from 'vitest';
import { boundedLabel, createMetrics, QUEUE_STATES, runKind, runMetricsObserver } from './metrics.js';
import type { RunObject, RunSpec } from '../core/schemas/run.js';

const spec = (ancestors: string[] = []) => ({ ancestors }) as unknown as RunSpec;
const run = (over: Partial<RunObject>) =>
  ({
    status: 'completed',
    stop_reason: 'stop',
    created_at: '2026-01-01T00:00:00.000Z',
    completed_at: '2026-01-01T00:00:02.500Z',
    ...over,
  }) as RunObject;

async function values(metrics: ReturnType<typeof createMetrics>, name: string) {
  const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? []) as Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>;
}

describe('createMetrics', () => {
  it('names every metric agentq_… and labels every series with its service', async () => {
    const m = createMetrics({ service: 'tool-worker' });
    m.toolCalls.inc({ tool: 'crm__search', outcome: 'ok' });
    const text = await m.registry.metrics();
    const names = text
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split(/[{ ]/)[0]);
    expect(names.length).toBeGreaterThan(10);
    for (const n of names) expect(n).toMatch(/^agentq_/);
    expect(text).toContain('agentq_tool_calls_total{tool="crm__search",outcome="ok",service="tool-worker"} 1');
    expect(text).toContain('agentq_process_cpu_seconds_total');
  });

  it('keeps services started in one process apart (one registry each)', async () => {
    const a = createMetrics({ service: 'api', processMetrics: false });
    const b = createMetrics({ service: 'agent-worker', processMetrics: false });
    a.runsStarted.inc();
    expect((await values(a, 'agentq_runs_started_total'))[0].value).toBe(1);
    expect((await values(b, 'agentq_runs_started_total'))[0].value).toBe(0);
  });
});

describe('runMetricsObserver', () => {
  it('counts runs created, started and finished with their labels, and their duration', async () => {
    const m = createMetrics({ service: 'agent-worker', processMetrics: false });
    const o = runMetricsObserver(m);
    o.runCreated!(spec());
    o.runCreated!(spec(['run_parent']));
    o.runStarted!('run_x');
    o.runFinished!(run({}), spec());
    o.runFinished!(run({ status: 'incomplete', stop_reason: 'max_depth' }), spec(['run_parent']));
    expect((await values(m, 'agentq_runs_created_total')).map((v) => [v.labels.kind, v.value])).toEqual([
      ['root', 1],
      ['subrun', 1],
    ]);
    expect((await values(m, 'agentq_runs_started_total'))[0].value).toBe(1);
    const finished = await values(m, 'agentq_runs_finished_total');
    expect(finished.map((v) => v.labels)).toEqual([
      { status: 'completed', stop_reason: 'stop', kind: 'root', service: 'agent-worker' },
      { status: 'incomplete', stop_reason: 'max_depth', kind: 'subrun', service: 'agent-worker' },
    ]);
    const sum = (await values(m, 'agentq_run_duration_seconds')).find(
      (v) => v.metricName === 'agentq_run_duration_seconds_sum' && v.labels.status === 'completed',
    );
    expect(sum?.value).toBe(2.5);
  });

  it('tells root runs from sub-runs', () => {
    expect(runKind(spec())).toBe('root');
    expect(runKind(spec(['run_a']))).toBe('subrun');
  });
});

describe('queue depth', () => {
  const fakeQueue = (name: string, counts: Record<string, number> | Error) =>
    ({
      name,
      getJobCounts: vi.fn(async () => (counts instanceof Error ? Promise.reject(counts) : counts)),
    }) as unknown as Queue;

  it('reads every queue by state at scrape time', async () => {
    const agent = fakeQueue('agent', {
      waiting: 3,
      active: 2,
      delayed: 1,
      'waiting-children': 4,
      prioritized: 0,
      failed: 7,
    });
    const m = createMetrics({ service: 'api', processMetrics: false, queues: [agent, fakeQueue('tool', {})] });
    const v = await values(m, 'agentq_queue_jobs');
    expect(v).toHaveLength(2 * QUEUE_STATES.length);
    expect(v.find((x) => x.labels.queue === 'agent' && x.labels.state === 'waiting-children')?.value).toBe(4);
    expect(v.find((x) => x.labels.queue === 'tool' && x.labels.state === 'failed')?.value).toBe(0);
    expect(agent.getJobCounts).toHaveBeenCalledWith(...QUEUE_STATES);
  });

  it('shows no stale depths when Redis does not answer, and reports why', async () => {
    let fail = false;
    const q = {
      name: 'agent',
      getJobCounts: async () => (fail ? Promise.reject(new Error('Connection is closed')) : { waiting: 5 }),
    } as unknown as Queue;
    const onQueueError = vi.fn();
    const m = createMetrics({ service: 'api', processMetrics: false, queues: [q], onQueueError });
    expect((await values(m, 'agentq_queue_jobs')).find((x) => x.labels.state === 'waiting')?.value).toBe(5);
    fail = true;
    expect(await values(m, 'agentq_queue_jobs')).toEqual([]);
    expect(onQueueError).toHaveBeenCalledWith(expect.objectContaining({ message: 'Connection is closed' }));
  });

  it('has no queue gauge on a service given no queues', () => {
    expect(createMetrics({ service: 'agent-worker', processMetrics: false }).queueJobs).toBeUndefined();
  });
});

describe('boundedLabel', () => {
  it('keeps the first values and folds the rest into "other"', () => {
    const label = boundedLabel(2, 8);
    expect(['gpt-4o', 'claude', 'gpt-4o', 'llama', 'a-very-long-model-name'].map(label)).toEqual([
      'gpt-4o',
      'claude',
      'gpt-4o',
      'other',
      'other',
    ]);
  });
});

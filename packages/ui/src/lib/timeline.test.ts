import { describe, expect, it } from 'vitest';
import type { RunView, StepView } from '../api.js';
import { applyEvent, emptyTree } from './live.js';
import { buildTimeline } from './timeline.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, model_calls: 1, tool_calls: 0 };

function run(id: string, over: Partial<RunView> = {}): RunView {
  return {
    id,
    object: 'run',
    status: 'completed',
    stop_reason: 'stop',
    model: 'm',
    depth: 1,
    max_depth: 10,
    parent_run_id: null,
    root_run_id: id,
    output: null,
    output_parsed: null,
    error: null,
    usage,
    usage_total: usage,
    metadata: {},
    created_at: at(0),
    started_at: at(10),
    completed_at: at(1000),
    ...over,
  };
}

const call = (id: string, name: string, over: Partial<StepView['tool_calls'][number]> = {}) => ({
  id,
  name,
  arguments: '{}',
  status: 'completed',
  output: 'ok',
  is_error: false,
  attempts: 1,
  duration_ms: 100,
  ...over,
});

const steps: StepView[] = [
  {
    depth: 0,
    status: 'completed',
    model: 'm',
    usage,
    started_at: at(10),
    completed_at: at(200),
    tool_calls: [
      call('a', 'crm__search', { started_at: at(210), completed_at: at(400) }),
      call('b', 'agent_query', { subrun_ids: ['run_child'] }),
    ],
  },
  { depth: 1, status: 'completed', model: 'm', usage, started_at: at(800), completed_at: at(1000), tool_calls: [] },
];

describe('the timeline of a run', () => {
  it('has the run, its steps and their calls, nesting a sub-run under the call that started it', () => {
    const child = run('run_child', {
      parent_run_id: 'run_root',
      created_at: at(250),
      started_at: at(260),
      completed_at: at(700),
    });
    const { rows, start, end } = buildTimeline({
      root: { run: run('run_root'), steps, children: [child] },
      expanded: new Map(),
      live: emptyTree(),
      now: T0 + 5000,
    });
    expect(rows.map((r) => [r.kind, r.level, r.label])).toEqual([
      ['run', 0, 'run'],
      ['step', 1, 'step 0'],
      ['call', 2, 'crm__search'],
      ['call', 2, 'agent_query'],
      ['run', 3, 'sub-run'],
      ['step', 1, 'step 1'],
    ]);
    expect([start, end]).toEqual([T0, T0 + 1000]);
    const search = rows[2]!;
    expect([search.start - T0, search.end - T0, search.estimated]).toEqual([210, 400, false]);
    // Without times of its own, a call starts when its step ended and lasts its duration (an estimate).
    const query = rows[3]!;
    expect([query.start - T0, query.end - T0, query.estimated]).toEqual([200, 300, true]);
    // The run was queued from its creation to its start.
    expect(rows[0]!.waits).toEqual([{ start: T0, end: T0 + 10, label: 'queued' }]);
    expect(rows[4]).toMatchObject({ runId: 'run_child', expandable: true, expanded: false });
  });

  it('draws the step in flight, its calls running and its retries from the events', () => {
    const live = emptyTree();
    const ev = (type: string, ms: number, data: Record<string, unknown>) =>
      applyEvent(live, 'run_root', { type, data: { run_id: 'run_root', at: at(ms), ...data } });
    ev('step.started', 10, { depth: 0 });
    ev('step.retry', 50, { depth: 0, attempt: 1, reason: 'HTTP 429', retry_in_ms: 100 });
    ev('step.started', 150, { depth: 0 });
    expect(ev('message.delta', 160, { depth: 0, text: 'Hel' })).toBe('text');
    ev('message.delta', 170, { depth: 0, text: 'lo' });
    expect(live.runs.get('run_root')!.streamed.get(0)).toBe('Hello');
    const going = run('run_root', { status: 'running', completed_at: null });
    const { rows } = buildTimeline({
      root: { run: going, steps: [], children: [] },
      expanded: new Map(),
      live,
      now: T0 + 400,
    });
    const step = rows.find((r) => r.kind === 'step')!;
    expect([step.start - T0, step.end - T0, step.live, step.detail]).toEqual([150, 400, true, 'streaming']);
    expect(step.marks.map((m) => m.label)).toEqual(['retry (attempt 1): HTTP 429, in 100 ms']);

    ev('step.completed', 300, { depth: 0 });
    expect(live.runs.get('run_root')!.streamed.has(0)).toBe(false);
    ev('subrun.started', 320, { run_id: 'run_child', tool_call_id: 'b', index: 1 });
    expect(live.subrunCall.get('run_child')).toMatchObject({ tool_call_id: 'b' });
    expect(ev('run.completed', 900, {})).toBe('data');
    expect(live.ended).toBe(true);
  });

  it('shows the wait of a call for an answer, until now while it waits', () => {
    const waiting: StepView = {
      ...steps[0]!,
      tool_calls: [
        call('a', 'crm__update', {
          status: 'requires_action',
          output: null,
          duration_ms: null,
          approval: { id: 'act_x', type: 'approval', decision: 'pending' },
        }),
      ],
    };
    const going = run('run_root', { status: 'requires_action', completed_at: null });
    const { rows } = buildTimeline({
      root: { run: going, steps: [waiting], children: [] },
      expanded: new Map(),
      live: emptyTree(),
      now: T0 + 900,
    });
    const c = rows.find((r) => r.kind === 'call')!;
    expect(c.waits).toEqual([{ start: T0 + 200, end: T0 + 900, label: 'waiting (approval): pending' }]);
    expect(c.live).toBe(true);
  });
});

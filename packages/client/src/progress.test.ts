import { describe, expect, it } from 'vitest';
import { progressPrinter, summary } from './progress.js';
import type { Run, RunEvent } from './types.js';

const toolDone = (output = '[]'): RunEvent => ({
  id: '1-0',
  event: 'tool.completed',
  data: {
    run_id: 'run_1',
    at: '2026-01-01T00:00:00.000Z',
    depth: 0,
    index: 0,
    tool_call_id: 'call_1',
    name: 'memory__search_nodes',
    is_error: false,
    duration_ms: 12,
    output,
  },
});

const lines = (events: RunEvent[], opts?: Parameters<typeof progressPrinter>[1]) => {
  const out: string[] = [];
  const print = progressPrinter((l) => out.push(l), opts);
  events.forEach(print);
  return out;
};

describe('progressPrinter', () => {
  it('shows a tool call with its duration, and its output only when asked', () => {
    const output = '{"entities": [\n  {"name": "Bob"}\n]}';
    expect(lines([toolDone(output)])).toEqual(['  ✓ memory__search_nodes 12 ms']);
    expect(lines([toolDone(output)], { toolOutputs: true })).toEqual([
      '  ✓ memory__search_nodes 12 ms',
      '    {"entities": [ {"name": "Bob"} ]}',
    ]);
  });

  it('cuts a long output to one line of 160 characters', () => {
    const [, shown] = lines([toolDone('x'.repeat(500))], { toolOutputs: true });
    expect(shown).toBe(`    ${'x'.repeat(159)}…`);
  });

  it("times a step from the events' `at`, not from when they arrived", () => {
    const usage = { prompt_tokens: 40, completion_tokens: 19, total_tokens: 59 };
    const started: RunEvent = {
      id: '1-0',
      event: 'step.started',
      data: { run_id: 'run_1', depth: 0, model: 'm', tools_disabled: false, at: '2026-01-01T00:00:00.000Z' },
    };
    const completed: RunEvent = {
      id: '2-0',
      event: 'step.completed',
      data: {
        depth: 0,
        usage,
        finish_reason: 'stop',
        content: 'hi',
        tool_calls: [],
        run_id: 'run_1',
        at: '2026-01-01T00:00:01.250Z',
      },
    };
    expect(lines([started, completed])).toEqual(['step 0 · m', '  answer · 59 tokens (40 + 19) · 1.3 s']);
  });

  it('shows each request of action.required and how each was decided', () => {
    const common = { run_id: 'run_1', at: '2026-01-01T00:00:00.000Z' };
    const item = { id: 'act_1_0_0', run_id: 'run_1', tool_call_id: 'call_1', created_at: common.at, expires_at: null };
    const required: RunEvent = {
      id: '1-0',
      event: 'action.required',
      data: {
        ...common,
        items: [
          {
            ...item,
            type: 'approval',
            name: 'crm__update_contact',
            arguments: '{"id":"c1"}',
            expires_at: '2026-01-02T00:00:00.000Z',
          },
          {
            ...item,
            id: 'act_1_0_1',
            type: 'input',
            name: 'ask_human',
            arguments: '{}',
            question: 'Which\nBob?',
            choices: ['Sales', 'IT'],
          },
          { ...item, id: 'act_1_0_2', type: 'client_tool', name: 'get_location', arguments: '{}' },
        ],
      },
    };
    const resolved = (id: string, decision: 'approved' | 'rejected'): RunEvent => ({
      id: '2-0',
      event: 'action.resolved',
      data: { ...common, id, decision },
    });
    expect(lines([required, resolved('act_1_0_0', 'approved'), resolved('act_1_0_1', 'rejected')])).toEqual([
      '  ⏸ approve crm__update_contact {"id":"c1"} · act_1_0_0 · expires 2026-01-02T00:00:00.000Z',
      '  ⏸ question: Which Bob? (Sales | IT) · act_1_0_1',
      '  ⏸ client tool get_location {} · act_1_0_2',
      '  ✓ act_1_0_0 approved',
      '  ✗ act_1_0_1 rejected',
    ]);
  });
});

describe('summary', () => {
  it('counts depth in rounds and model calls as steps', () => {
    const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, model_calls: 3, tool_calls: 2 };
    const run = {
      status: 'completed',
      stop_reason: 'stop',
      depth: 2,
      max_depth: 10,
      usage_total: usage,
      error: null,
      created_at: '2026-01-01T00:00:00.000Z',
      completed_at: '2026-01-01T00:00:01.500Z',
    } as Run;
    expect(summary(run)).toBe(
      'completed (stop) · depth 2/10 · 3 steps · 2 tool calls · 120 tokens (100 prompt + 20 completion) · 1.5 s',
    );
  });
});

import { describe, expect, it } from 'vitest';
import type { StepRecord } from '@agentq/shared';
import { toolMessagesInCallOrder } from './agent-turn-processor.js';

const step = (names: string[]): StepRecord => ({
  depth: 0,
  status: 'completed',
  model: 'm',
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  started_at: '2026-01-01T00:00:00.000Z',
  completed_at: '2026-01-01T00:00:01.000Z',
  message: {
    role: 'assistant',
    content: null,
    tool_calls: names.map((name, i) => ({ id: `call_${i}`, type: 'function' as const, function: { name, arguments: '{}' } })),
  },
});

describe('toolMessagesInCallOrder', () => {
  it('answers each call in the order of tool_calls, whatever order the results arrived in', () => {
    const prev = step(['crm__sleep', 'crm__search_contacts', 'crm__get_contact']);
    const results = new Map<number, { output: string }>([
      [2, { output: 'third' }],
      [0, { output: 'first' }],
      [1, { output: 'second' }],
    ]);
    expect(toolMessagesInCallOrder(prev, results)).toEqual([
      { role: 'tool', tool_call_id: 'call_0', content: 'first' },
      { role: 'tool', tool_call_id: 'call_1', content: 'second' },
      { role: 'tool', tool_call_id: 'call_2', content: 'third' },
    ]);
  });

  it('gives a call with no recorded result an error text naming its tool, so every call is answered', () => {
    const prev = step(['crm__search_contacts', 'crm__update_contact']);
    const msgs = toolMessagesInCallOrder(prev, new Map([[0, { output: '[]' }]]));
    expect(msgs).toHaveLength(2);
    expect(msgs[0]).toEqual({ role: 'tool', tool_call_id: 'call_0', content: '[]' });
    expect(msgs[1].role).toBe('tool');
    expect((msgs[1] as { tool_call_id: string }).tool_call_id).toBe('call_1');
    expect(msgs[1].content).toContain('crm__update_contact');
    expect(String(msgs[1].content).toLowerCase()).toMatch(/error|fail/);
  });

  it('keeps an empty output as the result (it is not a missing result)', () => {
    const msgs = toolMessagesInCallOrder(step(['crm__sleep']), new Map([[0, { output: '' }]]));
    expect(msgs[0].content).toBe('');
  });

  it('is empty for a step without tool calls', () => {
    const prev = step([]);
    delete prev.message.tool_calls;
    expect(toolMessagesInCallOrder(prev, new Map())).toEqual([]);
  });
});

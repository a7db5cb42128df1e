import { describe, expect, it } from 'vitest';
import type { ChatMessage, ToolCall } from './schemas/message.js';
import { toolLimitRefusals, toolLimitsSchema } from './tool-limits.js';

const call = (name: string, i = 0): ToolCall => ({
  id: `c${i}`,
  type: 'function',
  function: { name, arguments: '{}' },
});
const step = (...names: string[]): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: names.map((n, i) => call(n, i)),
});
const refused = (limits: Record<string, number>, transcript: ChatMessage[], names: string[]) =>
  toolLimitRefusals(
    limits,
    transcript,
    names.map((n, i) => call(n, i)),
  ).map((r) => r !== undefined);

describe('tool_limits', () => {
  it('lets a tool be called up to its limit in a run, counting the earlier steps, and refuses the rest', () => {
    const limits = { crm__update_user: 3 };
    expect(refused(limits, [], ['crm__update_user', 'crm__update_user'])).toEqual([false, false]);
    const earlier = [
      step('crm__update_user', 'crm__update_user'),
      { role: 'tool', content: 'ok', tool_call_id: 'c0' } as ChatMessage,
    ];
    expect(refused(limits, earlier, ['crm__update_user', 'crm__update_user', 'crm__search'])).toEqual([
      false,
      true,
      false,
    ]);
  });

  it('counts the tools a glob matches together, and a call must have room in every entry it matches', () => {
    const limits = { 'crm__*': 2, '*': 3 };
    expect(refused(limits, [], ['crm__a', 'other', 'crm__b', 'crm__c', 'other2'])).toEqual([
      false,
      false,
      false,
      true,
      true,
    ]);
  });

  it('does not count a refused call, and says why in words the model reads', () => {
    const limits = { a: 1, '*': 2 };
    // a, a (refused: a is full), b: the refused call left room in "*".
    const why = toolLimitRefusals(limits, [], [call('a'), call('a'), call('b')]);
    expect(why.map((w) => w !== undefined)).toEqual([false, true, false]);
    expect(why[1]).toMatch(/^tool_limits: a may be called at most 1 times in this run/);
    expect(toolLimitRefusals({ x: 0 }, [], [call('x')])[0]).toMatch(/not at all/);
  });

  it('takes names and globs with whole limits, at most 50 of them', () => {
    expect(toolLimitsSchema.safeParse({ 'crm__*': 3, '*': 50 }).success).toBe(true);
    expect(toolLimitsSchema.safeParse({ 'bad name': 1 }).success).toBe(false);
    expect(toolLimitsSchema.safeParse({ a: -1 }).success).toBe(false);
    expect(
      toolLimitsSchema.safeParse(Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`t${i}`, 1]))).success,
    ).toBe(false);
  });
});

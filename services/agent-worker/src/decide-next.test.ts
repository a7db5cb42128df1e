import { describe, expect, it } from 'vitest';
import type { AssistantMessage, BudgetName } from '@agentq/shared';
import { decideNext, planStep, type StepPlan } from './decide-next.js';

const BUDGETS: BudgetName[] = ['max_depth', 'max_total_tokens', 'timeout'];
const answer: AssistantMessage = { role: 'assistant', content: 'The answer.' };
const wantsTools: AssistantMessage = {
  role: 'assistant',
  content: null,
  tool_calls: [
    { id: 'call_1', type: 'function', function: { name: 'crm__search_contacts', arguments: '{"query":"Bob"}' } },
    { id: 'call_2', type: 'function', function: { name: 'crm__get_contact', arguments: '{"id":"c1"}' } },
  ],
};
const finalAnswer = { on_budget_exhausted: 'final_answer' as const };
const stop = { on_budget_exhausted: 'stop' as const };

function call(plan: StepPlan): Extract<StepPlan, { kind: 'call' }> {
  expect(plan.kind).toBe('call');
  return plan as Extract<StepPlan, { kind: 'call' }>;
}

describe('planStep', () => {
  it.each([finalAnswer, stop])('with no budget used up offers the tools ($on_budget_exhausted)', (spec) => {
    expect(planStep(spec, null, true)).toEqual({ kind: 'call', toolChoice: 'auto', budget: null, stopIfTools: false });
  });

  it.each([finalAnswer, stop])('with no tools at all sends none ($on_budget_exhausted)', (spec) => {
    expect(planStep(spec, null, false)).toMatchObject({ kind: 'call', toolChoice: 'absent', budget: null });
  });

  it.each(BUDGETS)('final_answer: %s makes one last call with tools disabled', (budget) => {
    expect(planStep(finalAnswer, budget, true)).toEqual({ kind: 'call', toolChoice: 'none', budget, stopIfTools: false });
  });

  it.each(BUDGETS)('final_answer: %s with no tools makes one last call without tools', (budget) => {
    expect(planStep(finalAnswer, budget, false)).toEqual({ kind: 'call', toolChoice: 'absent', budget, stopIfTools: false });
  });

  it('stop: max_depth lets the model answer but ends the run if it still wants tools', () => {
    expect(planStep(stop, 'max_depth', true)).toEqual({ kind: 'call', toolChoice: 'auto', budget: 'max_depth', stopIfTools: true });
  });

  it.each(['max_total_tokens', 'timeout'] as const)('stop: %s ends the run without another model call', (budget) => {
    expect(planStep(stop, budget, true)).toEqual({ kind: 'stop', budget });
    expect(planStep(stop, budget, false)).toEqual({ kind: 'stop', budget });
  });
});

describe('decideNext', () => {
  it('an answer without tool calls is the final answer (stop)', () => {
    expect(decideNext(call(planStep(finalAnswer, null, true)), answer)).toEqual({ kind: 'final_answer', stopReason: 'stop' });
    expect(decideNext(call(planStep(stop, null, false)), answer)).toEqual({ kind: 'final_answer', stopReason: 'stop' });
  });

  it('tool calls with tools offered start a tool round with every call, in order', () => {
    expect(decideNext(call(planStep(finalAnswer, null, true)), wantsTools)).toEqual({ kind: 'tool_calls', toolCalls: wantsTools.tool_calls });
  });

  it('an empty tool_calls array is an answer, not a tool round', () => {
    expect(decideNext(call(planStep(finalAnswer, null, true)), { role: 'assistant', content: 'ok', tool_calls: [] })).toEqual({
      kind: 'final_answer',
      stopReason: 'stop',
    });
  });

  it.each(BUDGETS)('final_answer: the last call after %s completes the run naming the budget', (budget) => {
    const plan = call(planStep(finalAnswer, budget, true));
    expect(decideNext(plan, answer)).toEqual({ kind: 'final_answer', stopReason: budget });
  });

  it.each(BUDGETS)('final_answer: tool calls asked for while tools are disabled (%s) are not run', (budget) => {
    expect(decideNext(call(planStep(finalAnswer, budget, true)), wantsTools)).toEqual({ kind: 'final_answer', stopReason: budget });
    expect(decideNext(call(planStep(finalAnswer, budget, false)), wantsTools)).toEqual({ kind: 'final_answer', stopReason: budget });
  });

  it('a model that asks for tools the run does not have gets no tool round', () => {
    expect(decideNext(call(planStep(finalAnswer, null, false)), wantsTools)).toEqual({ kind: 'final_answer', stopReason: 'stop' });
    expect(decideNext(call(planStep(stop, null, false)), wantsTools)).toEqual({ kind: 'final_answer', stopReason: 'stop' });
  });

  it('stop: at max_depth a model that still wants tools ends the run on the budget', () => {
    expect(decideNext(call(planStep(stop, 'max_depth', true)), wantsTools)).toEqual({ kind: 'budget_exhausted', budget: 'max_depth' });
  });

  it('stop: at max_depth a model that answers completes the run', () => {
    expect(decideNext(call(planStep(stop, 'max_depth', true)), answer)).toEqual({ kind: 'final_answer', stopReason: 'stop' });
  });

  it('stop: at max_depth with no tools the model\'s answer completes the run', () => {
    const plan = call(planStep(stop, 'max_depth', false));
    expect(plan.toolChoice).toBe('absent');
    expect(decideNext(plan, answer).kind).toBe('final_answer');
    expect(decideNext(plan, wantsTools).kind).toBe('final_answer');
  });
});

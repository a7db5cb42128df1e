import { describe, expect, it } from 'vitest';
import type { AssistantMessage, BudgetName } from '@agentq/shared/core';
import { decideStep, planOfStoredStep, planStep, type CallPlan, type StepPlan } from './step-decision.js';

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

function call(plan: StepPlan): CallPlan {
  expect(plan.kind).toBe('call');
  return plan as CallPlan;
}

const text = { on_budget_exhausted: 'final_answer' as const };
// The decision on a model message, for the spec and tools of the plan's run.
const decideNext = (plan: CallPlan, message: AssistantMessage, spec: Parameters<typeof decideStep>[2] = text) =>
  decideStep(plan, { kind: 'message', message }, spec, plan.toolChoice !== 'absent');
const kindOf = (d: ReturnType<typeof decideNext>) =>
  d.kind === 'final_answer'
    ? { kind: d.kind, stopReason: d.stopReason }
    : d.kind === 'tool_calls'
      ? { kind: d.kind, toolCalls: d.toolCalls }
      : d.kind === 'budget_exhausted'
        ? { kind: d.kind, budget: d.budget }
        : { kind: d.kind };

describe('planStep', () => {
  it.each([finalAnswer, stop])('with no budget used up offers the tools ($on_budget_exhausted)', (spec) => {
    expect(planStep(spec, null, true)).toEqual({ kind: 'call', toolChoice: 'auto', budget: null, stopIfTools: false });
  });

  it.each([finalAnswer, stop])('with no tools at all sends none ($on_budget_exhausted)', (spec) => {
    expect(planStep(spec, null, false)).toMatchObject({ kind: 'call', toolChoice: 'absent', budget: null });
  });

  it.each(BUDGETS)('final_answer: %s makes one last call with tools disabled', (budget) => {
    expect(planStep(finalAnswer, budget, true)).toEqual({
      kind: 'call',
      toolChoice: 'none',
      budget,
      stopIfTools: false,
    });
  });

  it.each(BUDGETS)('final_answer: %s with no tools makes one last call without tools', (budget) => {
    expect(planStep(finalAnswer, budget, false)).toEqual({
      kind: 'call',
      toolChoice: 'absent',
      budget,
      stopIfTools: false,
    });
  });

  it('stop: max_depth lets the model answer but ends the run if it still wants tools', () => {
    expect(planStep(stop, 'max_depth', true)).toEqual({
      kind: 'call',
      toolChoice: 'auto',
      budget: 'max_depth',
      stopIfTools: true,
    });
  });

  it.each(['max_total_tokens', 'timeout'] as const)('stop: %s ends the run without another model call', (budget) => {
    expect(planStep(stop, budget, true)).toEqual({ kind: 'stop', budget });
    expect(planStep(stop, budget, false)).toEqual({ kind: 'stop', budget });
  });
});

describe('decideStep on a model message', () => {
  it('an answer without tool calls is the final answer (stop)', () => {
    expect(kindOf(decideNext(call(planStep(finalAnswer, null, true)), answer))).toEqual({
      kind: 'final_answer',
      stopReason: 'stop',
    });
    expect(kindOf(decideNext(call(planStep(stop, null, false)), answer))).toEqual({
      kind: 'final_answer',
      stopReason: 'stop',
    });
  });

  it('tool calls with tools offered start a tool round with every call, in order', () => {
    expect(kindOf(decideNext(call(planStep(finalAnswer, null, true)), wantsTools))).toEqual({
      kind: 'tool_calls',
      toolCalls: wantsTools.tool_calls,
    });
  });

  it('an empty tool_calls array is an answer, not a tool round', () => {
    expect(
      kindOf(decideNext(call(planStep(finalAnswer, null, true)), { role: 'assistant', content: 'ok', tool_calls: [] })),
    ).toEqual({
      kind: 'final_answer',
      stopReason: 'stop',
    });
  });

  it.each(BUDGETS)('final_answer: the last call after %s completes the run naming the budget', (budget) => {
    const plan = call(planStep(finalAnswer, budget, true));
    expect(kindOf(decideNext(plan, answer))).toEqual({ kind: 'final_answer', stopReason: budget });
  });

  it.each(BUDGETS)('final_answer: tool calls asked for while tools are disabled (%s) are not run', (budget) => {
    expect(kindOf(decideNext(call(planStep(finalAnswer, budget, true)), wantsTools))).toEqual({
      kind: 'final_answer',
      stopReason: budget,
    });
    expect(kindOf(decideNext(call(planStep(finalAnswer, budget, false)), wantsTools))).toEqual({
      kind: 'final_answer',
      stopReason: budget,
    });
  });

  it('a model that asks for tools the run does not have gets no tool round', () => {
    expect(kindOf(decideNext(call(planStep(finalAnswer, null, false)), wantsTools))).toEqual({
      kind: 'final_answer',
      stopReason: 'stop',
    });
    expect(kindOf(decideNext(call(planStep(stop, null, false)), wantsTools))).toEqual({
      kind: 'final_answer',
      stopReason: 'stop',
    });
  });

  it('stop: at max_depth a model that still wants tools ends the run on the budget', () => {
    expect(kindOf(decideNext(call(planStep(stop, 'max_depth', true)), wantsTools))).toEqual({
      kind: 'budget_exhausted',
      budget: 'max_depth',
    });
  });

  it('stop: at max_depth a model that answers completes the run', () => {
    expect(kindOf(decideNext(call(planStep(stop, 'max_depth', true)), answer))).toEqual({
      kind: 'final_answer',
      stopReason: 'stop',
    });
  });

  it("stop: at max_depth with no tools the model's answer completes the run", () => {
    const plan = call(planStep(stop, 'max_depth', false));
    expect(plan.toolChoice).toBe('absent');
    expect(decideNext(plan, answer).kind).toBe('final_answer');
    expect(decideNext(plan, wantsTools).kind).toBe('final_answer');
  });
});

describe('decideStep: what the step stores and ends with', () => {
  it('drops tool calls made while tools were not offered from the message it stores (the only place that does)', () => {
    for (const plan of [call(planStep(finalAnswer, 'max_depth', true)), call(planStep(finalAnswer, null, false))]) {
      const d = decideNext(plan, { ...wantsTools, content: 'Done.' });
      expect(d.kind).toBe('final_answer');
      if (d.kind !== 'final_answer') return;
      expect(d.message).toEqual({ role: 'assistant', content: 'Done.' });
      expect(d.output).toEqual({ role: 'assistant', content: 'Done.' });
    }
    // Offered: the stored message keeps every call, in order.
    const d = decideNext(call(planStep(finalAnswer, null, true)), wantsTools);
    expect(d.kind === 'tool_calls' && d.message.tool_calls).toEqual(wantsTools.tool_calls);
  });

  it('keeps the message that asked for tools past max_depth under stop as the output', () => {
    const d = decideNext(call(planStep(stop, 'max_depth', true)), wantsTools);
    expect(d).toEqual({ kind: 'budget_exhausted', budget: 'max_depth', message: wantsTools });
  });

  it('an answer with no text gives an empty output, and a refusal is kept', () => {
    const d = decideNext(call(planStep(finalAnswer, null, true)), {
      role: 'assistant',
      content: null,
      refusal: 'I cannot.',
    });
    expect(d.kind === 'final_answer' && d.output).toEqual({ role: 'assistant', content: '', refusal: 'I cannot.' });
  });
});

describe('decideStep when the deadline passed during the call', () => {
  const late = { kind: 'deadline_passed' as const };

  it('final_answer: one more call, tools disabled, naming the timeout', () => {
    expect(decideStep(call(planStep(finalAnswer, null, true)), late, finalAnswer, true)).toEqual({
      kind: 'final_call',
      plan: { kind: 'call', toolChoice: 'none', budget: 'timeout', stopIfTools: false },
    });
    expect(decideStep(call(planStep(finalAnswer, null, false)), late, finalAnswer, false)).toEqual({
      kind: 'final_call',
      plan: { kind: 'call', toolChoice: 'absent', budget: 'timeout', stopIfTools: false },
    });
  });

  it('stop: the run ends on the timeout, with nothing to store', () => {
    expect(decideStep(call(planStep(stop, null, true)), late, stop, true)).toEqual({
      kind: 'budget_exhausted',
      budget: 'timeout',
    });
  });

  it('the final call it asks for then completes the run naming the timeout', () => {
    const d = decideStep(call(planStep(finalAnswer, null, true)), late, finalAnswer, true);
    if (d.kind !== 'final_call') throw new Error(d.kind);
    expect(kindOf(decideNext(d.plan, wantsTools))).toEqual({ kind: 'final_answer', stopReason: 'timeout' });
  });
});

describe('decideStep with a response_format', () => {
  const schema = {
    ...finalAnswer,
    response_format: {
      type: 'json_schema' as const,
      json_schema: {
        name: 'person',
        schema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      },
    },
  };
  const plan = call(planStep(finalAnswer, null, true));

  it('a final answer that fits is parsed into outputParsed', () => {
    const d = decideNext(plan, { role: 'assistant', content: '{"name":"Bob"}' }, schema);
    expect(d.kind === 'final_answer' && d.outputParsed).toEqual({ name: 'Bob' });
  });

  it('a final answer that does not fit fails the step, keeping the answer as the output', () => {
    for (const content of ['not json', '{"nom":"Bob"}']) {
      const d = decideNext(plan, { role: 'assistant', content }, schema);
      expect(d.kind).toBe('failed');
      if (d.kind !== 'failed') return;
      expect(d.error.code).toBe('invalid_structured_output');
      expect(d.output.content).toBe(content);
    }
  });

  it('tool calls are not checked against it (only the final answer is)', () => {
    expect(decideNext(plan, wantsTools, schema).kind).toBe('tool_calls');
  });
});

describe('planOfStoredStep', () => {
  it('a stored step made as a final call keeps that plan on redelivery', () => {
    expect(planOfStoredStep(call(planStep(finalAnswer, null, true)), { budget: 'max_depth' })).toEqual({
      kind: 'call',
      toolChoice: 'none',
      budget: 'max_depth',
      stopIfTools: false,
    });
  });

  it('otherwise the plan of this attempt holds', () => {
    const plan = call(planStep(finalAnswer, null, true));
    expect(planOfStoredStep(plan, {})).toBe(plan);
    const final = call(planStep(finalAnswer, 'timeout', true));
    expect(planOfStoredStep(final, { budget: 'max_depth' })).toBe(final);
  });
});

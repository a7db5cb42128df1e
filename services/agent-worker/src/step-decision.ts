import {
  AgentqError,
  type AssistantMessage,
  type BudgetName,
  type RunSpec,
  type StopReason,
  type ToolCall,
} from '@agentq/shared/core';
import { type StepRecord } from '@agentq/shared/store';
import { parseStructuredOutput } from './structured-output.js';

/** How the next model call is made. */
export interface CallPlan {
  kind: 'call';
  /** `auto`: tools offered; `none`: offered but disabled; `absent`: the run has no tools. */
  toolChoice: 'auto' | 'none' | 'absent';
  /** The budget that is used up, if any. */
  budget: BudgetName | null;
  /** Under the `stop` policy at max_depth: the model may still answer, but tools end the run. */
  stopIfTools: boolean;
}

/** How the next model call is made, or that none is made. */
export type StepPlan = CallPlan | { kind: 'stop'; budget: BudgetName };

/**
 * Decides the next model call from the budget state and the run's policy: `final_answer`
 * makes one last call with tools disabled; `stop` lets the model answer at max_depth but
 * ends the run if it still wants tools, and ends it at once for tokens and time.
 */
export function planStep(
  spec: Pick<RunSpec, 'on_budget_exhausted'>,
  budget: BudgetName | null,
  hasTools: boolean,
): StepPlan {
  const offered = hasTools ? 'auto' : 'absent';
  if (!budget) return { kind: 'call', toolChoice: offered, budget: null, stopIfTools: false };
  if (spec.on_budget_exhausted === 'final_answer')
    return { kind: 'call', toolChoice: hasTools ? 'none' : 'absent', budget, stopIfTools: false };
  if (budget === 'max_depth') return { kind: 'call', toolChoice: offered, budget, stopIfTools: true };
  return { kind: 'stop', budget };
}

/**
 * The plan a stored step was made under: a redelivered step that was made as a final call
 * (tools disabled on a budget) keeps that plan even if this attempt sees no budget used up.
 */
export function planOfStoredStep(plan: CallPlan, step: Pick<StepRecord, 'budget'>): CallPlan {
  return step.budget && !plan.budget
    ? { kind: 'call', toolChoice: 'none', budget: step.budget, stopIfTools: false }
    : plan;
}

type DecisionSpec = Pick<RunSpec, 'on_budget_exhausted' | 'response_format'>;

/** What the model call gave: an assistant message, or nothing because the run's deadline passed. */
export type ModelAnswer = { kind: 'message'; message: AssistantMessage } | { kind: 'deadline_passed' };

/** The run's final output: the answer's text (and refusal). */
export interface RunOutput {
  role: 'assistant';
  content: string;
  refusal?: string | null;
}

/**
 * What a model step leads to. `message` is the assistant message to store for the step: the
 * model's, without its tool calls when tools were not offered.
 */
export type StepDecision =
  | {
      kind: 'final_answer';
      message: AssistantMessage;
      output: RunOutput;
      outputParsed: unknown;
      stopReason: StopReason;
    }
  | { kind: 'tool_calls'; message: AssistantMessage; toolCalls: ToolCall[] }
  /** The run ends incomplete; `message` (the step that asked for tools past max_depth) is its output. */
  | { kind: 'budget_exhausted'; budget: BudgetName; message?: AssistantMessage }
  /** A final answer that fails its response_format. */
  | { kind: 'failed'; message: AssistantMessage; output: RunOutput; error: { code: string; message: string } }
  /** The deadline passed during the call: make one more, with tools disabled, under this plan. */
  | { kind: 'final_call'; plan: CallPlan };

/** A decision that ends the step: every kind but `final_call`. */
export type StepOutcome = Exclude<StepDecision, { kind: 'final_call' }>;

/**
 * Decides what follows a model call, from the plan it was made under and the model's answer:
 * the one place that drops tool calls made while tools were not offered, handles a deadline
 * that passed during the call (the run's budget policy decides between one last call and the
 * end), and checks a final answer against the run's response_format.
 */
export function decideStep(
  plan: CallPlan,
  answer: Extract<ModelAnswer, { kind: 'message' }>,
  spec: DecisionSpec,
  hasTools: boolean,
): StepOutcome;
export function decideStep(plan: CallPlan, answer: ModelAnswer, spec: DecisionSpec, hasTools: boolean): StepDecision;
export function decideStep(plan: CallPlan, answer: ModelAnswer, spec: DecisionSpec, hasTools: boolean): StepDecision {
  if (answer.kind === 'deadline_passed') {
    const next = planStep(spec, 'timeout', hasTools);
    return next.kind === 'stop'
      ? { kind: 'budget_exhausted', budget: next.budget }
      : { kind: 'final_call', plan: next };
  }
  const { tool_calls: calls = [], ...rest } = answer.message;
  // A model that asks for tools it was not offered (or that were disabled) gets no tool round.
  const toolCalls = plan.toolChoice === 'auto' ? calls : [];
  const message: AssistantMessage = toolCalls.length ? { ...rest, tool_calls: toolCalls } : rest;
  if (toolCalls.length) {
    if (plan.stopIfTools && plan.budget) return { kind: 'budget_exhausted', budget: plan.budget, message };
    return { kind: 'tool_calls', message, toolCalls };
  }
  const output: RunOutput = {
    role: 'assistant',
    content: message.content ?? '',
    ...(message.refusal ? { refusal: message.refusal } : {}),
  };
  try {
    const outputParsed = parseStructuredOutput(spec.response_format, message.content);
    return {
      kind: 'final_answer',
      message,
      output,
      outputParsed,
      stopReason: plan.budget && !plan.stopIfTools ? plan.budget : 'stop',
    };
  } catch (err) {
    if (!(err instanceof AgentqError)) throw err;
    return { kind: 'failed', message, output, error: { code: err.code, message: err.message } };
  }
}

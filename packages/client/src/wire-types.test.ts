// The client's wire types are written by hand (the client has no dependencies); the service's
// are zod schemas in @agentq/shared. These checks keep the two in line: the type aliases below
// fail `tsc -p tsconfig.json` when a field drifts, and the tests run the schemas on what the
// client sends.
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  type actionItemSchema,
  type agentObjectSchema,
  type putAgentBodySchema,
  actionResponseSchema,
  type listActionsQuerySchema,
  MAX_RESPONSE_CHARS as SERVER_MAX_RESPONSE_CHARS,
  type runEventDataSchemas,
  type runObjectSchema,
  type stepToolCallSchema,
  type webhookPayloadSchema,
  type Known,
  type RunStatus as ServerRunStatus,
  type StopReason as ServerStopReason,
} from '@agentq/shared/core';
import { type ActionDecisionKind } from '@agentq/shared/runs';
import type { Agent, AgentDefinition } from './agent-types.js';
import {
  MAX_REASON_CHARS,
  MAX_RESPONSE_CHARS,
  type ActionDecision,
  type ActionItem,
  type ActionResponse,
  type CreateRunRequest,
  type InboxItem,
  type ListActionsParams,
  type Run,
  type RunEventCommon,
  type RunEventData,
  type RunStatus,
  type StepToolCall,
  type StopReason,
  type WebhookPayload,
} from './types.js';

/** Compiles only when A is assignable to B. */
type Fits<A extends B, B> = A;
/** What the service sends, without the index signature of a loose object. */
type Sent<S extends z.ZodType> = Known<z.output<S>>;

// What the service sends fits what the client promises...
export type ActionItemReceived = Fits<Sent<typeof actionItemSchema>, ActionItem>;
export type RunReceived = Fits<Sent<typeof runObjectSchema>, Run>;
export type StepToolCallReceived = Fits<Sent<typeof stepToolCallSchema>, StepToolCall>;
export type ActionRequiredReceived = Fits<
  Sent<(typeof runEventDataSchemas)['action.required']>,
  RunEventData['action.required'] & RunEventCommon
>;
export type ActionResolvedReceived = Fits<
  Sent<(typeof runEventDataSchemas)['action.resolved']>,
  RunEventData['action.resolved'] & RunEventCommon
>;
export type WebhookTypeReceived = Fits<z.output<typeof webhookPayloadSchema>['type'], WebhookPayload['type']>;
// ...and the client names no field the service does not send.
export type ActionItemFields = Fits<keyof ActionItem, keyof Sent<typeof actionItemSchema>>;
export type RunFields = Fits<keyof Run, keyof Sent<typeof runObjectSchema>>;
export type StepToolCallFields = Fits<keyof StepToolCall, keyof Sent<typeof stepToolCallSchema>>;
export type ApprovalRecordFields = Fits<
  keyof NonNullable<StepToolCall['approval']>,
  keyof NonNullable<Sent<typeof stepToolCallSchema>['approval']>
>;
export type ModelSettingsAccepted = Fits<
  NonNullable<CreateRunRequest['model_settings']>,
  NonNullable<z.input<typeof putAgentBodySchema>['model_settings']>
>;
export type AgentFields = Fits<keyof Agent, keyof Sent<typeof agentObjectSchema>>;
export type AgentDefinitionAccepted = Fits<keyof AgentDefinition, keyof z.input<typeof putAgentBodySchema>>;
export type WebhookTypePromised = Fits<WebhookPayload['type'], z.output<typeof webhookPayloadSchema>['type']>;
export type StatusesMatch = [Fits<RunStatus, ServerRunStatus>, Fits<ServerRunStatus, RunStatus>];
export type StopReasonsMatch = [Fits<StopReason, ServerStopReason>, Fits<ServerStopReason, StopReason>];
export type DecisionsMatch = [Fits<ActionDecision, ActionDecisionKind>, Fits<ActionDecisionKind, ActionDecision>];
export type InboxStatusesMatch = [
  Fits<InboxItem['status'], NonNullable<ListActionsParams['status']>>,
  Fits<NonNullable<z.output<typeof listActionsQuerySchema>['status']>, InboxItem['status']>,
];
// What the client sends is what the service takes.
export type ResponsesAccepted = Fits<ActionResponse, z.input<typeof actionResponseSchema>>;
export type ApprovalAccepted = Fits<
  NonNullable<CreateRunRequest['approval']>['on_timeout'],
  'reject' | 'stop' | undefined
>;

describe('the client wire types against the service schemas', () => {
  it('sends every one of the five response shapes in a form the service accepts', () => {
    const responses: ActionResponse[] = [
      { id: 'act_x', approve: true },
      { id: 'act_x', approve: true, arguments: '{"id":42}' },
      { id: 'act_x', approve: false, reason: 'wrong customer' },
      { id: 'act_x', approve: false },
      { id: 'act_x', output: 'Berlin' },
      { id: 'act_x', answer: 'the one in Sales' },
    ];
    for (const r of responses) expect(actionResponseSchema.safeParse(r).success, JSON.stringify(r)).toBe(true);
  });

  it('has the service limits of a response', () => {
    expect(MAX_RESPONSE_CHARS).toBe(SERVER_MAX_RESPONSE_CHARS);
    const reason = (n: number) =>
      actionResponseSchema.safeParse({ id: 'act_x', approve: false, reason: 'r'.repeat(n) }).success;
    expect(reason(MAX_REASON_CHARS)).toBe(true);
    expect(reason(MAX_REASON_CHARS + 1)).toBe(false);
  });
});

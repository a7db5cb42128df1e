import { z } from 'zod';
import type { ToolCatalogEntry } from '../../store/tool-catalog.js';
import type { RUN_EVENT_TYPES } from './events.js';
import { chatMessageSchema, toolCallSchema } from './message.js';
import { RUN_STATUSES, STOP_REASONS, type RunObject } from './run.js';
import { usageSchema } from './usage.js';
import { TOOL_OUTCOME_KINDS } from '../tool-outcome.js';
import { tenantLimitsSchema } from '../../tenants/limits.js';

// The response shapes of the HTTP API. Objects are loose: the contract lets the service add
// fields, so a client must accept (and these schemas keep) fields it does not know yet.

const timestamp = z.iso.datetime({ offset: true });
const runId = z.string().regex(/^run_[0-9a-z]{21}$/);

/** Every error: `{"error": {"code", "message", "details"?}}`. */
export const apiErrorSchema = z.looseObject({
  error: z.looseObject({
    code: z.string().regex(/^[a-z][a-z0-9_]*$/, 'snake_case'),
    message: z.string(),
    details: z.unknown().optional(),
  }),
});
export type ApiError = z.infer<typeof apiErrorSchema>;

/** The final assistant message of a run. */
export const runOutputSchema = z.looseObject({
  role: z.literal('assistant'),
  content: z.string().nullable(),
  tool_calls: z.array(toolCallSchema).optional(),
  refusal: z.string().nullable().optional(),
});

/** A request for an answer (`required_action.items`, the inbox). */
export const actionItemSchema = z.looseObject({
  id: z.string().regex(/^act_[0-9a-z]{21}_\d+_\d+$/),
  type: z.enum(['approval', 'client_tool', 'input']),
  run_id: runId,
  tool_call_id: z.string(),
  name: z.string(),
  arguments: z.string(),
  question: z.string().optional(),
  choices: z.array(z.string()).nullable().optional(),
  created_at: timestamp,
  expires_at: timestamp.nullable(),
  respond_url: z.string().optional(),
});

/** The run object (`GET /v1/runs/:id`). */
export const runObjectSchema = z.looseObject({
  id: runId,
  object: z.literal('run'),
  status: z.enum(RUN_STATUSES),
  stop_reason: z.enum(STOP_REASONS).nullable(),
  model: z.string(),
  depth: z.number().int().min(0),
  max_depth: z.number().int().min(1),
  parent_run_id: runId.nullable(),
  root_run_id: runId,
  output: runOutputSchema.nullable(),
  output_parsed: z.unknown(),
  error: z.looseObject({ code: z.string(), message: z.string() }).nullable(),
  usage: usageSchema.loose(),
  usage_total: usageSchema.loose(),
  /** The saved agent the run runs as, at its version. */
  agent: z.looseObject({ name: z.string(), version: z.number().int().min(1) }).nullable(),
  metadata: z.record(z.string(), z.unknown()),
  created_at: timestamp,
  started_at: timestamp.nullable(),
  completed_at: timestamp.nullable(),
  required_action: z.looseObject({ items: z.array(actionItemSchema) }).optional(),
});

/** `GET /v1/runs`: a page of runs, newest first; `next` is the `after` of the next page. */
export const runListSchema = z.looseObject({ data: z.array(runObjectSchema), next: runId.nullable() });

/** The query of `GET /v1/runs`. */
export const listRunsQuerySchema = z.strictObject({
  status: z.enum(RUN_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z
    .string()
    .regex(/^run_[0-9a-z]{21}$/, 'a run id (the "next" of the previous page)')
    .optional(),
  /** Only runs whose id or metadata (its JSON text) holds this text, case-insensitively. */
  q: z.string().min(1).max(200).optional(),
  /** `true`: only runs that are no sub-run. */
  top_level: z.enum(['true', 'false']).optional(),
});

/** The query of `GET /v1/runs/counts`. */
export const runCountsQuerySchema = z.strictObject({
  /** `true`: count only runs that are no sub-run. */
  top_level: z.enum(['true', 'false']).optional(),
});

/** `GET /v1/runs/counts`: how many of the key's newest runs (up to 10,000) are in each status. */
export const runCountsSchema = z.looseObject({
  counts: z.partialRecord(z.enum(RUN_STATUSES), z.number().int().min(0)),
  /** The runs counted. */
  runs: z.number().int().min(0),
  /** False when the key has more runs than were counted (the newest 10,000 were). */
  complete: z.boolean(),
});

/** `GET /v1/runs/:id/messages`: the transcript in OpenAI chat format. */
export const runMessagesSchema = z.looseObject({ data: z.array(chatMessageSchema) });

/** One tool call of a step, with its outcome once it has one. */
export const stepToolCallSchema = z.looseObject({
  id: z.string(),
  name: z.string(),
  arguments: z.string(),
  /** `requires_action`: the call waits for an answer (see `approval`). */
  status: z.enum(['queued', 'requires_action', 'running', 'completed', 'failed']),
  output: z.string().nullable(),
  is_error: z.boolean(),
  /** How the call ended, once it has (see ToolOutcomeKind). */
  outcome: z.enum(TOOL_OUTCOME_KINDS).optional(),
  attempts: z.number().int().min(0),
  duration_ms: z.number().min(0).nullable(),
  subrun_ids: z.array(runId).optional(),
  /** For a call that waited for an answer: the decision, who made it and when. */
  approval: z
    .looseObject({
      id: z.string(),
      type: z.enum(['approval', 'client_tool', 'input']),
      decision: z.enum(['pending', 'approved', 'rejected', 'answered', 'expired', 'cancelled']),
      reason: z.string().optional(),
      arguments: z.string().optional(),
      by: z.string().optional(),
      at: timestamp.optional(),
    })
    .optional(),
});

/** One model step of a run. */
export const runStepSchema = z.looseObject({
  depth: z.number().int().min(0),
  status: z.literal('completed'),
  model: z.string(),
  usage: z.looseObject({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
    /** US dollars, when the price of the model is known. */
    cost_usd: z.number().min(0).optional(),
  }),
  started_at: timestamp,
  completed_at: timestamp,
  /** A final answer that failed the run's response_format (the run repairs it, or fails). */
  error: z.looseObject({ code: z.string(), message: z.string() }).optional(),
  /** A step that repairs such an answer: which repair (1, 2, …). */
  repair: z.number().int().min(1).optional(),
  tool_calls: z.array(stepToolCallSchema),
});

/** `GET /v1/runs/:id/steps`. */
export const runStepsSchema = z.looseObject({ data: z.array(runStepSchema) });

/** `GET /v1/runs/:id/children`: the sub-agent runs, oldest first. */
export const runChildrenSchema = z.looseObject({ data: z.array(runObjectSchema) });

/** One attempt to deliver a run's webhook. */
export const webhookDeliverySchema = z.looseObject({
  webhook_id: z.string(),
  type: z.string(),
  attempt: z.number().int().min(1),
  url: z.string(),
  at: timestamp,
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number().min(0),
  success: z.boolean(),
});

export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

/** `GET /v1/runs/:id/webhook-deliveries`. */
export const webhookDeliveriesSchema = z.looseObject({ data: z.array(webhookDeliverySchema) });

/** A tool the model can be offered, as `<server>__<tool>`. */
export const toolInfoSchema = z.looseObject({
  name: z.string(),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()),
  server: z.string(),
});

/** `GET /v1/tools`. */
export const toolListSchema = z.looseObject({ data: z.array(toolInfoSchema) });

/** `GET /v1/usage`: where a key stands against its limits. */
export const keyUsageSchema = z.looseObject({
  active_runs: z.number().int().min(0),
  queued_runs: z.number().int().min(0),
  /** Runs that wait for an answer (approvals, client tools, questions): they hold no slot. */
  waiting_runs: z.number().int().min(0),
  tokens_today: z.number().int().min(0),
  cost_usd_today: z.number().min(0),
  limits: tenantLimitsSchema.loose(),
});

/** `GET /healthz`. */
export const healthSchema = z.looseObject({ status: z.literal('ok') });
/** `GET /readyz` when Redis answers. */
export const readySchema = z.looseObject({ status: z.literal('ready') });

const usageTokens = z.looseObject({
  prompt_tokens: z.number().int(),
  completion_tokens: z.number().int(),
  total_tokens: z.number().int(),
});

// Every event's data says which run it is about (`run_id`; a sub-run's for `subrun.*`) and when it happened (`at`).
const eventData = <S extends z.ZodRawShape>(shape: S) => z.looseObject({ run_id: runId, at: timestamp, ...shape });

/** The `data:` of each event type of `GET /v1/runs/:id/events`. */
export const runEventDataSchemas = {
  'run.queued': eventData({}),
  'run.started': eventData({}),
  'step.started': eventData({ depth: z.number().int(), model: z.string(), tools_disabled: z.boolean() }),
  'message.delta': eventData({ depth: z.number().int(), text: z.string() }),
  'step.completed': eventData({
    depth: z.number().int(),
    usage: usageTokens,
    finish_reason: z.string().nullable(),
    content: z.string().nullable(),
    tool_calls: z.array(z.looseObject({ id: z.string(), name: z.string(), arguments: z.string() })),
  }),
  'tool.started': eventData({
    depth: z.number().int(),
    index: z.number().int(),
    tool_call_id: z.string(),
    name: z.string(),
    attempt: z.number().int(),
  }),
  'tool.completed': eventData({
    depth: z.number().int(),
    index: z.number().int(),
    tool_call_id: z.string(),
    name: z.string(),
    is_error: z.boolean(),
    duration_ms: z.number().min(0),
    /** The call's output as the model sees it, cut at 16 KB (then `truncated`). */
    output: z.string(),
    truncated: z.boolean().optional(),
    /** How the call ended (see ToolOutcomeKind). */
    outcome: z.enum(TOOL_OUTCOME_KINDS).optional(),
  }),
  'subrun.started': eventData({ depth: z.number().int(), tool_call_id: z.string(), index: z.number().int() }),
  'subrun.completed': eventData({ status: z.string(), tool_call_id: z.string(), index: z.number().int() }),
  /** Requests for an answer a round made (on the waiting run's stream and its root's). */
  'action.required': eventData({ items: z.array(actionItemSchema) }),
  /** A request was decided (answered, expired or cancelled). */
  'action.resolved': eventData({
    id: z.string(),
    decision: z.enum(['approved', 'rejected', 'answered', 'expired', 'cancelled']),
  }),
  'run.completed': eventData({ run: runObjectSchema }),
  'run.failed': eventData({ run: runObjectSchema }),
  'run.cancelled': eventData({ run: runObjectSchema }),
  'run.incomplete': eventData({ run: runObjectSchema }),
} satisfies Record<(typeof RUN_EVENT_TYPES)[number], z.ZodType>;

const sse = <T extends (typeof RUN_EVENT_TYPES)[number]>(event: T) =>
  z.object({ id: z.string().regex(/^\d+-\d+$/), event: z.literal(event), data: runEventDataSchemas[event] });

/** One server-sent event as a client parses it: `id:`, `event:` and the JSON of `data:`. */
export const runEventSchema = z.discriminatedUnion('event', [
  sse('run.queued'),
  sse('run.started'),
  sse('step.started'),
  sse('message.delta'),
  sse('step.completed'),
  sse('tool.started'),
  sse('tool.completed'),
  sse('subrun.started'),
  sse('subrun.completed'),
  sse('action.required'),
  sse('action.resolved'),
  sse('run.completed'),
  sse('run.failed'),
  sse('run.cancelled'),
  sse('run.incomplete'),
]);

/** The body of a webhook POST (signed per Standard Webhooks). */
export const webhookPayloadSchema = z.looseObject({
  /** `run.requires_action`: sent to the root's webhook each time something of its tree starts waiting. */
  type: z.enum(['run.completed', 'run.failed', 'run.cancelled', 'run.incomplete', 'run.requires_action']),
  timestamp: timestamp,
  data: runObjectSchema,
});

// Compile-time checks that what the service builds fits the schemas it publishes (the
// schemas' index signatures, from looseObject, are left out of the comparison).
/** `T` without the index signatures that looseObject adds: the fields a schema names. */
export type Known<T> = T extends readonly (infer U)[]
  ? Known<U>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : K]: Known<T[K]> }
    : T;
type Fits<A extends B, B> = A;
export type RunObjectFitsSchema = Fits<Known<RunObject>, Known<z.input<typeof runObjectSchema>>>;
export type ToolFitsSchema = Fits<Known<ToolCatalogEntry>, Known<z.input<typeof toolInfoSchema>>>;

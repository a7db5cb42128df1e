// The pieces the OpenAPI document (openapi.ts) is built from: its types, its component schemas,
// generated from the zod schemas, and the parameters and responses its paths share.
import { z } from 'zod';
import {
  actionItemSchema,
  agentListSchema,
  agentObjectSchema,
  createAgentBodySchema,
  putAgentBodySchema,
  apiErrorSchema,
  chatMessageSchema,
  linkAnswerSchema,
  respondBodySchema,
  createRunBodySchema,
  healthSchema,
  listRunsQuerySchema,
  readySchema,
  RUN_EVENT_TYPES,
  runChildrenSchema,
  runEventSchema,
  runListSchema,
  runMessagesSchema,
  runObjectSchema,
  runStepsSchema,
  toolListSchema,
  keyUsageSchema,
  webhookDeliveriesSchema,
  webhookPayloadSchema,
} from '@agentq/shared/core';

export type Json = Record<string, unknown>;
export type Meta = { id: string; description?: string };

/** A JSON Schema of the document (`$ref` to a component, or inline). */
export interface OpenApiSchema {
  $ref?: string;
  description?: string;
  [k: string]: unknown;
}
export interface OpenApiMedia {
  schema?: OpenApiSchema;
  /** The schema of each event of a stream (`text/event-stream`). */
  'x-itemSchema'?: OpenApiSchema;
}
export interface OpenApiResponse {
  $ref?: string;
  description?: string;
  content?: Record<string, OpenApiMedia>;
  [k: string]: unknown;
}
export interface OpenApiParameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: OpenApiSchema;
}
export interface OpenApiOperation {
  tags?: string[];
  summary?: string;
  description?: string;
  security?: unknown[];
  parameters?: OpenApiParameter[];
  requestBody?: { required?: boolean; content: Record<string, OpenApiMedia> };
  responses: Record<string, OpenApiResponse>;
  [k: string]: unknown;
}
export type OpenApiPathItem = Partial<Record<'get' | 'post' | 'put' | 'patch' | 'delete', OpenApiOperation>>;
/** The OpenAPI 3.1 document, as far as its readers (the reference page, the tests) look into it. */
export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; summary?: string; description?: string; [k: string]: unknown };
  tags: Array<{ name: string; description?: string }>;
  paths: Record<string, OpenApiPathItem>;
  webhooks?: Record<string, OpenApiPathItem>;
  components: {
    schemas: Record<string, OpenApiSchema>;
    responses: Record<string, OpenApiResponse>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/**
 * The JSON Schemas of the components, generated from the zod schemas that validate requests
 * (as input: what a client may send, defaults optional) and from the response schemas (as
 * output: what the service always sends).
 */
export function componentSchemas(): Record<string, Json> {
  const requests = z.registry<Meta>();
  requests.add(createRunBodySchema, {
    id: 'CreateRunRequest',
    description: 'The body of POST /v1/runs: give "input" or "messages".',
  });
  requests.add(createAgentBodySchema, { id: 'CreateAgentRequest', description: 'The body of POST /v1/agents.' });
  requests.add(putAgentBodySchema, {
    id: 'PutAgentRequest',
    description: 'The body of PUT /v1/agents/{name} ("name" may be left out).',
  });
  requests.add(chatMessageSchema, { id: 'ChatMessageInput', description: 'An OpenAI chat message, as sent.' });
  requests.add(linkAnswerSchema, {
    id: 'LinkAnswer',
    description:
      'One answer sent to a signed link: as a response of ActionResponses, its request named by the link ("id" ' +
      "optional, and then that request's).",
  });
  requests.add(respondBodySchema, {
    id: 'ActionResponses',
    description:
      'Answers to requests of a run tree: approve (maybe with edited arguments) or reject an approval, a client ' +
      "tool's output, an answer to a question.",
  });

  const responses = z.registry<Meta>();
  responses.add(apiErrorSchema, {
    id: 'Error',
    description:
      'Every error response: a snake_case code, a message that says how to fix it, and optional details (for a ' +
      '400, one entry per bad field).',
  });
  responses.add(actionItemSchema, {
    id: 'ActionItem',
    description: "A request for an answer: an approval of a tool call, a client tool's call, or a question.",
  });
  const actionState = actionItemSchema.extend({
    status: z.enum(['pending', 'resolved']),
    decision: z.string().optional(),
    resolved_at: z.string().optional(),
  });
  responses.add(actionState, {
    id: 'ActionState',
    description: 'A request with where it stands: pending, or resolved with its decision and when.',
  });
  responses.add(
    z.looseObject({
      data: z.array(actionState),
      next: z.string().nullable(),
    }),
    { id: 'ActionList', description: 'A page of requests, newest first; pass "next" as "after" for the next page.' },
  );
  responses.add(agentObjectSchema, { id: 'Agent', description: 'A saved agent at one version.' });
  responses.add(agentListSchema, {
    id: 'AgentList',
    description: 'A page of agents (or of one agent’s versions); pass "next" as "after" for the next page.',
  });
  responses.add(runObjectSchema, { id: 'Run', description: 'A run: one agent loop, from its request to its answer.' });
  responses.add(runListSchema, {
    id: 'RunList',
    description: 'A page of runs, newest first; pass "next" as "after" for the next page.',
  });
  responses.add(chatMessageSchema, { id: 'ChatMessage', description: 'An OpenAI chat message of a transcript.' });
  responses.add(runMessagesSchema, {
    id: 'RunMessages',
    description: 'The whole transcript in OpenAI chat format, in order.',
  });
  responses.add(runStepsSchema, { id: 'RunSteps', description: 'The model steps of a run, each with its tool calls.' });
  responses.add(runChildrenSchema, {
    id: 'RunChildren',
    description: 'The sub-agent runs a run started, oldest first.',
  });
  responses.add(webhookDeliveriesSchema, {
    id: 'WebhookDeliveries',
    description: 'Every attempt to deliver the run’s webhook.',
  });
  responses.add(keyUsageSchema, { id: 'Usage', description: 'Where a key stands against its limits.' });
  responses.add(toolListSchema, {
    id: 'ToolList',
    description: 'The MCP tools the tool-workers offer, named <server>__<tool>.',
  });
  responses.add(healthSchema, { id: 'Health' });
  responses.add(readySchema, { id: 'Ready' });
  responses.add(runEventSchema, {
    id: 'RunEvent',
    description: `One server-sent event (id, event, parsed JSON data). Event types: ${RUN_EVENT_TYPES.join(', ')}.`,
  });
  responses.add(webhookPayloadSchema, {
    id: 'WebhookPayload',
    description: 'The body POSTed to a run’s webhook when it reaches a terminal status.',
  });

  const uri = (id: string) => `#/components/schemas/${id}`;
  const out: Record<string, Json> = {};
  for (const [registry, io] of [
    [requests, 'input'],
    [responses, 'output'],
  ] as const) {
    const { schemas } = z.toJSONSchema(registry, { io, uri, target: 'draft-2020-12' }) as {
      schemas: Record<string, Json>;
    };
    for (const [id, s] of Object.entries(schemas)) {
      // A component lives inside the document: no $schema (the document's dialect) and no
      // fragment-only $id (invalid in 2020-12).
      const { $schema: _schema, $id: _id, ...rest } = s;
      out[id] = rest;
    }
  }
  return out;
}

export const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') } },
});

export const ERRORS = {
  400: errorResponse('Bad JSON or failed validation; `details` names each bad field.'),
  401: errorResponse('No or an unknown API key (only when API_KEYS is set).'),
  403: errorResponse(
    "The dashboard refuses API keys (it shows every tenant's jobs): only ADMIN_API_KEYS, and API keys " +
      'TENANTS_CONFIG marks admin, open it.',
  ),
  404: errorResponse('No such run, or a run of another API key.'),
  409: errorResponse(
    'The Idempotency-Key was used before with a different body, or its first request is still being processed; ' +
      'for an answer: the request was decided before (`action_resolved`).',
  ),
  413: errorResponse('The body, or one of its fields, is larger than the limit; the message names the field.'),
  415: errorResponse('The body is not sent as application/json.'),
  429: {
    ...errorResponse(
      "Over one of the tenant's limits (requests_per_minute; for a new run also max_queued_runs or " +
        'max_tokens_per_day): `rate_limited`.',
    ),
    headers: {
      'Retry-After': { description: 'Seconds until the request may succeed.', schema: { type: 'integer', minimum: 1 } },
    },
  },
  503: errorResponse('Redis is unreachable; retry shortly (see Retry-After).'),
} as const;
export type ErrorStatus = keyof typeof ERRORS;
export const errors = (...codes: ErrorStatus[]) =>
  Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]));

export const json = (description: string, schema: Json, headers?: Json) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema } },
});

export const runIdParam = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'A run id (`run_…`).',
  schema: { type: 'string', pattern: '^run_[0-9a-z]{21}$' },
};

/** The query parameters of a list (`GET /v1/runs`, `GET /v1/actions`), from the same zod schema as the route's. */
export function listQueryParams(schema: z.ZodType = listRunsQuerySchema, what = 'runs'): OpenApiParameter[] {
  const s = z.toJSONSchema(schema, { io: 'input' }) as { properties: Record<string, Json> };
  const doc: Record<string, string> = {
    status: `Only ${what} with this status.`,
    limit: 'Page size.',
    after: 'The "next" of the previous page.',
    q: 'Only runs whose id or metadata (as JSON text) holds this text, case-insensitively.',
    top_level: '`true`: only runs that are no sub-run.',
  };
  return Object.entries(s.properties).map(([name, schema]) => ({
    name,
    in: 'query',
    required: false,
    description: doc[name],
    schema,
  }));
}

export const runGet = (operationId: string, summary: string, description: string, schema: string, ok: string) => ({
  get: {
    tags: ['runs'],
    operationId,
    summary,
    description,
    parameters: [runIdParam],
    responses: { 200: json(ok, ref(schema)), ...errors(401, 429, 404, 503) },
  },
});

/** An error of a signed link: a page for a browser (a GET, a form), the error shape for JSON. */
export const linkError = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') }, 'text/html': { schema: { type: 'string' } } },
});
export const linkParams = [
  {
    name: 'id',
    in: 'path',
    required: true,
    description: 'A request id (`act_…`).',
    schema: { type: 'string', pattern: '^act_[0-9a-z]{21}_\\d+_\\d+$' },
  },
  {
    name: 'token',
    in: 'query',
    required: true,
    description: 'The token of the link (`<expiry ms or n>.<signature>`), as `respond_url` gives it.',
    schema: { type: 'string' },
  },
];
export const linkErrors = {
  403: linkError(
    "The token does not open this request (tampered, truncated, another request's): " +
      'one answer for all, revealing nothing.',
  ),
  404: linkError('Answering by link is off (ACTION_LINK_SECRET is not set).'),
  410: linkError(
    'The request no longer waits: answered (the link was used), expired, cancelled or gone (`action_resolved` with ' +
      'the decision, or `link_gone`).',
  ),
};

/** Builds the OpenAPI 3.1 document of the HTTP API. */

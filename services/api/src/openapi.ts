import { listActionsQuerySchema } from '@agentq/shared/core';
import { actionLinkPath } from './openapi-link-path.js';
import {
  type OpenApiDocument,
  ref,
  componentSchemas,
  ERRORS,
  errors,
  json,
  runIdParam,
  listQueryParams,
  runGet,
} from './openapi-parts.js';
import { uiPaths } from './openapi-ui.js';
import { agentPaths } from './openapi-agents.js';

export type {
  OpenApiSchema,
  OpenApiMedia,
  OpenApiResponse,
  OpenApiParameter,
  OpenApiOperation,
  OpenApiPathItem,
  OpenApiDocument,
} from './openapi-parts.js';

export function buildOpenApiDocument(): OpenApiDocument {
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'agentq',
      version: '1.0.0',
      summary: 'A durable agent runtime: tool-using LLM agents run as jobs on Redis.',
      description:
        'Version 1 of the HTTP API. JSON everywhere, timestamps ISO 8601 UTC, ids opaque strings with a prefix ' +
        '(`run_…`). Responses may gain fields: clients must ignore fields they do not know. ' +
        'When the server has API_KEYS set, every /v1/* and /admin/* request needs `Authorization: ' +
        'Bearer <key>` (but a signed link, /v1/actions/{id}/respond, whose token is its key), and a run is visible ' +
        'only to the key that created it.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    tags: [
      { name: 'runs', description: 'Create, follow, list and cancel runs.' },
      { name: 'actions', description: 'Answer what runs wait for: approvals, client tools, questions.' },
      { name: 'agents', description: 'Saved agents: named, versioned run definitions.' },
      { name: 'tools', description: 'The tools a run can use.' },
      { name: 'usage', description: 'Where a key stands against its limits (TENANTS_CONFIG).' },
      { name: 'service', description: 'Health, readiness, metrics, this document and the dashboard.' },
      { name: 'ui', description: 'The run inspector (a browser app) and its browser login.' },
    ],
    security: [{ bearerAuth: [] }],
    paths: {
      ...uiPaths(),
      '/v1/runs': {
        post: {
          tags: ['runs'],
          operationId: 'createRun',
          summary: 'Start a run',
          description:
            'Queues a run and returns it at once. With an Idempotency-Key, the same key and body return the same ' +
            'run (200), a different body a 409.',
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              description: 'Makes retries of this request safe.',
              schema: { type: 'string', minLength: 1 },
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('CreateRunRequest') } } },
          responses: {
            202: json('The run, queued.', ref('Run'), {
              Location: { description: 'The run’s URL.', schema: { type: 'string' } },
            }),
            200: json('The run this Idempotency-Key created before.', ref('Run'), {
              Location: { description: 'The run’s URL.', schema: { type: 'string' } },
            }),
            ...errors(400, 401, 429, 409, 413, 415, 503),
          },
        },
        get: {
          tags: ['runs'],
          operationId: 'listRuns',
          summary: 'List runs',
          description: 'The runs of this API key, newest first.',
          parameters: listQueryParams(),
          responses: { 200: json('A page of runs.', ref('RunList')), ...errors(400, 401, 429, 503) },
        },
      },
      '/v1/runs/{id}': runGet('getRun', 'Get a run', 'The run object: status, output, usage.', 'Run', 'The run.'),
      '/v1/runs/{id}/messages': runGet(
        'getRunMessages',
        'Get the transcript',
        'System, user, assistant (with tool_calls) and tool messages, in order.',
        'RunMessages',
        'The transcript.',
      ),
      '/v1/runs/{id}/steps': runGet(
        'getRunSteps',
        'Get the steps',
        'Each model step with its usage and its tool calls (status, output, attempts, duration).',
        'RunSteps',
        'The steps.',
      ),
      '/v1/runs/{id}/children': runGet(
        'getRunChildren',
        'Get the sub-runs',
        'The runs its agent_query / agent_query_batch calls started.',
        'RunChildren',
        'The sub-runs.',
      ),
      '/v1/runs/{id}/webhook-deliveries': runGet(
        'getRunWebhookDeliveries',
        'Get the webhook deliveries',
        'Every attempt to deliver the run’s webhook, with status code or error.',
        'WebhookDeliveries',
        'The delivery attempts.',
      ),
      '/v1/runs/{id}/events': {
        get: {
          tags: ['runs'],
          operationId: 'streamRunEvents',
          summary: 'Follow a run’s events',
          description:
            'Server-sent events: each has `id:` (resumable with Last-Event-ID), `event:` (the type) and JSON ' +
            '`data:`. A late subscriber first gets the history. The stream closes after the one terminal event ' +
            '(run.completed, run.failed, run.cancelled or run.incomplete). ' +
            'Comment lines keep idle connections open. Each event, parsed, is a RunEvent. ' +
            'An API process holds at most MAX_EVENT_STREAMS_PER_KEY open streams of one key (past it 429 ' +
            'rate_limited) and MAX_EVENT_STREAMS in all (503 server_busy).',
          parameters: [
            runIdParam,
            {
              name: 'Last-Event-ID',
              in: 'header',
              required: false,
              description:
                "Resume after this event id: `<ms>-<seq>`, each part below 2^64, not after the run's last event " +
                '(else 400 naming the header).',
              schema: { type: 'string', pattern: '^\\d{1,20}-\\d{1,20}$' },
            },
            {
              name: 'last_event_id',
              in: 'query',
              required: false,
              description: 'The same, for clients that cannot set headers (the header wins).',
              schema: { type: 'string', pattern: '^\\d{1,20}-\\d{1,20}$' },
            },
          ],
          responses: {
            200: {
              description: 'The event stream.',
              content: { 'text/event-stream': { schema: { type: 'string' }, 'x-itemSchema': ref('RunEvent') } },
            },
            ...errors(400, 401, 429, 404, 503),
          },
        },
      },
      '/v1/runs/{id}/cancel': {
        post: {
          tags: ['runs'],
          operationId: 'cancelRun',
          summary: 'Cancel a run',
          description:
            'Idempotent. No model step or tool call of the run or its sub-runs starts after it; ' +
            'queued work is removed. A finished run is returned unchanged.',
          parameters: [runIdParam],
          responses: {
            202: json('The run, cancelled (or as it finished).', ref('Run')),
            ...errors(401, 429, 404, 503),
          },
        },
      },
      '/v1/runs/{id}/actions': {
        post: {
          tags: ['actions'],
          operationId: 'respondToActions',
          summary: 'Answer what a run waits for',
          description:
            'Answers requests of the run or of its sub-runs (`required_action.items`); partial answers are fine. ' +
            "Every response is checked first: an unknown request (or another tenant's) is a 404, a response of the " +
            "wrong kind or edited arguments that do not fit the tool's input schema a 400, and nothing is stored. " +
            'A request is decided once: a second answer gets 409 `action_resolved`.',
          parameters: [runIdParam],
          requestBody: { required: true, content: { 'application/json': { schema: ref('ActionResponses') } } },
          responses: {
            200: json('The run, as it is after the answers.', ref('Run')),
            ...errors(400, 401, 429, 404, 409, 413, 415, 503),
          },
        },
      },
      '/v1/actions': {
        get: {
          tags: ['actions'],
          operationId: 'listActions',
          summary: 'The inbox',
          description: "This tenant's requests for an answer across all its runs, newest first.",
          parameters: listQueryParams(listActionsQuerySchema, 'requests'),
          responses: { 200: json('A page of requests.', ref('ActionList')), ...errors(400, 401, 429, 503) },
        },
      },
      '/v1/actions/{id}/respond': actionLinkPath(),
      ...agentPaths(),
      '/v1/tools': {
        get: {
          tags: ['tools'],
          operationId: 'listTools',
          summary: 'List tools',
          description:
            'The MCP tools published by the tool-workers (built-in tools are offered per run and not listed).',
          responses: { 200: json('The tools.', ref('ToolList')), ...errors(401, 429, 503) },
        },
      },
      '/v1/usage': {
        get: {
          tags: ['usage'],
          operationId: 'getUsage',
          summary: 'Where this key stands',
          description:
            "The key's runs running and waiting in its line, its tokens today (UTC), and its limits (TENANTS_CONFIG).",
          responses: { 200: json('The usage.', ref('Usage')), ...errors(401, 429, 503) },
        },
      },
      '/healthz': {
        get: {
          tags: ['service'],
          operationId: 'health',
          summary: 'Liveness',
          security: [],
          responses: { 200: json('The process is up.', ref('Health')) },
        },
      },
      '/readyz': {
        get: {
          tags: ['service'],
          operationId: 'ready',
          summary: 'Readiness',
          security: [],
          responses: { 200: json('Redis answers.', ref('Ready')), 503: { $ref: '#/components/responses/E503' } },
        },
      },
      '/metrics': {
        get: {
          tags: ['service'],
          operationId: 'metrics',
          summary: 'Prometheus metrics',
          security: [],
          responses: {
            200: { description: 'Prometheus text format.', content: { 'text/plain': { schema: { type: 'string' } } } },
          },
        },
      },
      '/openapi.json': {
        get: {
          tags: ['service'],
          operationId: 'openapi',
          summary: 'This document',
          security: [],
          responses: { 200: json('OpenAPI 3.1.', { type: 'object' }) },
        },
      },
      '/docs': {
        get: {
          tags: ['service'],
          operationId: 'docs',
          summary: 'API reference (HTML)',
          security: [],
          responses: {
            200: { description: 'This document as a page.', content: { 'text/html': { schema: { type: 'string' } } } },
          },
        },
      },
      '/admin/queues': {
        get: {
          tags: ['service'],
          operationId: 'dashboard',
          summary: 'Bull Board dashboard',
          description:
            'The queues (agent, tool, webhook) and their jobs; job names carry the run id, step and tool. ' +
            "It shows every tenant's jobs: with API_KEYS set, only the ADMIN_API_KEYS and the API keys " +
            'TENANTS_CONFIG marks admin open it.',
          responses: {
            200: { description: 'The dashboard.', content: { 'text/html': { schema: { type: 'string' } } } },
            ...errors(401, 403),
          },
        },
      },
    },
    webhooks: {
      runFinished: {
        post: {
          summary: 'A run reached a terminal status, or started waiting (run.requires_action)',
          description:
            'Signed per Standard Webhooks: `webhook-signature` is `v1,<base64 HMAC-SHA256 of ' +
            '"<webhook-id>.<webhook-timestamp>.<body>">` with the secret (a `whsec_` secret is base64 after the ' +
            'prefix). Any 2xx is success; otherwise retried with exponential backoff; 410 stops the retries.',
          security: [],
          parameters: [
            {
              name: 'webhook-id',
              in: 'header',
              required: true,
              description: 'Stable across retries: deduplicate on it.',
              schema: { type: 'string' },
            },
            {
              name: 'webhook-timestamp',
              in: 'header',
              required: true,
              description: 'Unix seconds of this attempt.',
              schema: { type: 'string', pattern: '^\\d+$' },
            },
            {
              name: 'webhook-signature',
              in: 'header',
              required: true,
              description: 'Space-separated `v1,<signature>` entries.',
              schema: { type: 'string' },
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('WebhookPayload') } } },
          responses: {
            '2XX': { description: 'Delivered.' },
            410: { description: 'Stop retrying.' },
            default: { description: 'Retried later.' },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'One of the API_KEYS of the server.' },
      },
      responses: Object.fromEntries(Object.entries(ERRORS).map(([c, r]) => [`E${c}`, r])),
      schemas: componentSchemas(),
    },
  };
}

import { z } from 'zod';
import { runCountsQuerySchema, runCountsSchema } from '@agentq/shared/core';
import { errors, json, listQueryParams, type OpenApiPathItem } from './openapi-parts.js';

const page = (operationId: string, summary: string, description: string) => ({
  tags: ['ui'],
  operationId,
  summary,
  description,
  security: [],
  responses: {
    200: {
      description: 'The inspector’s page (its script reads the path).',
      content: { 'text/html': { schema: { type: 'string' } } },
    },
    503: { description: 'The inspector is not built (`npm run build` builds it).' },
  },
});

const session = json(
  'Whether a key is needed, who is signed in, and the CSRF token the signed-in page sends as X-CSRF-Token.',
  {
    type: 'object',
    properties: {
      keys_required: { type: 'boolean', description: 'API_KEYS or ADMIN_API_KEYS is set.' },
      signed_in: { type: 'boolean' },
      api: { type: 'boolean', description: 'The login opens /v1.' },
      dashboard: { type: 'boolean', description: 'The login opens /admin/queues.' },
      csrf_token: { type: ['string', 'null'] },
    },
  },
);

/** The run inspector's paths (its pages, assets and browser login) and the run counts its list reads. */
export function uiPaths(): Record<string, OpenApiPathItem> {
  const runPage = page('uiRun', 'A run in the inspector', 'Its header, timeline, transcript and pending requests.');
  return {
    '/': {
      get: {
        tags: ['ui'],
        operationId: 'root',
        summary: 'To the inspector',
        security: [],
        responses: { 302: { description: 'Redirects to /ui/.' } },
      },
    },
    '/ui': { get: page('ui', 'The run inspector', 'The runs of the signed-in key; it asks for a key first.') },
    '/ui/runs/{id}': {
      get: {
        ...runPage,
        parameters: [{ name: 'id', in: 'path', required: true, description: 'A run id.', schema: { type: 'string' } }],
      },
    },
    '/ui/inbox': { get: page('uiInbox', 'Requests waiting for an answer', 'Across the key’s runs.') },
    '/ui/login': {
      get: page('uiLoginPage', 'The login page', 'A form that takes an API key.'),
      post: {
        tags: ['ui'],
        operationId: 'uiLogin',
        summary: 'Sign a browser in',
        description:
          'Takes a key (of API_KEYS or ADMIN_API_KEYS) and sets an HttpOnly, SameSite=Strict session cookie that ' +
          'stands in for the bearer key on /v1 and /admin/queues; a request signed in by it that changes something ' +
          'needs the X-CSRF-Token header. Refused from another site.',
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
            },
          },
        },
        responses: { 200: session, ...errors(400, 401, 413, 415) },
      },
    },
    '/ui/logout': {
      post: {
        tags: ['ui'],
        operationId: 'uiLogout',
        summary: 'Sign a browser out',
        description: 'Ends the session (everywhere) and clears the cookie; needs the X-CSRF-Token header.',
        security: [],
        responses: { 200: session },
      },
    },
    '/ui/session': {
      get: {
        tags: ['ui'],
        operationId: 'uiSession',
        summary: 'The browser login',
        security: [],
        responses: { 200: session },
      },
    },
    '/ui/assets/{file}': {
      get: {
        tags: ['ui'],
        operationId: 'uiAsset',
        summary: 'A file of the inspector',
        security: [],
        parameters: [
          { name: 'file', in: 'path', required: true, description: 'A hashed file name.', schema: { type: 'string' } },
        ],
        responses: { 200: { description: 'The file, cached for good.' }, ...errors(404) },
      },
    },
    '/v1/runs/counts': {
      get: {
        tags: ['runs'],
        operationId: 'countRuns',
        summary: 'Count runs by status',
        description: 'How many of the key’s newest 10,000 runs are in each status (`complete` false past them).',
        parameters: listQueryParams(runCountsQuerySchema),
        responses: {
          200: json('The counts.', z.toJSONSchema(runCountsSchema, { io: 'output' })),
          ...errors(400, 401, 429, 503),
        },
      },
    },
  };
}

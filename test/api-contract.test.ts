import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Handler } from '@agentq/scripted-llm';
import type { ApiError, RunObject } from '@agentq/shared/core';
import type { ApiClient, GetBody, TestRequestInit } from './fixtures/api-client.js';
import { startApp, type TestApp } from './fixtures/app.js';
import { startStack, type Stack } from './fixtures/services.js';
import { readSse } from './fixtures/sse.js';
import { waitFor } from './fixtures/wait.js';

// The public HTTP contract of /work/shared/API.md, checked from the outside: statuses, the
// error shape, auth and tenancy, listing, the dashboard. Most of it needs no worker and goes
// straight into the API's Hono app (`app.request()`); what needs runs to finish, or the
// tool-worker's catalog, runs on one whole stack at the end of the file.

const KEY_A = 'key-a-0123456789';
const KEY_B = 'key-b-0123456789';
/** Only the listing tests create runs with this key, so its listing is exactly theirs. */
const KEY_LIST = 'key-list-0123456789';
/** Opens the dashboard, which no API key does (it shows every tenant's jobs). */
const KEY_ADMIN = 'key-admin-0123456789';
const MAX_BODY = 64 * 1024;
const MAX_INPUT = 16 * 1024;
const MAX_CONTEXT = 32 * 1024;
const env = {
  API_KEYS: [KEY_A, KEY_B, KEY_LIST].join(','),
  ADMIN_API_KEYS: KEY_ADMIN,
  MAX_BODY_BYTES: String(MAX_BODY),
  MAX_INPUT_BYTES: String(MAX_INPUT),
  MAX_CONTEXT_BYTES: String(MAX_CONTEXT),
};

const handler: Handler = (req) => {
  const user = String(req.messages.find((m) => m.role === 'user')?.content ?? '');
  const rounds = req.messages.filter((m) => m.role === 'assistant').length;
  if (user.startsWith('fail:')) return { error: { status: 401, message: 'Incorrect API key provided' } };
  if (user.startsWith('tool:') && rounds === 0)
    return { tool_calls: [{ name: 'crm__get_contact', arguments: { id: 'c1' } }] };
  return { content: `ok: ${user.slice(0, 40)}` };
};

let app: TestApp;
beforeAll(async () => {
  app = await startApp({ apiKey: KEY_A, env });
});
afterAll(async () => app?.close());

/** What exists in the app's Redis: every stored run, and the agent queue's jobs (nothing takes them). */
async function storedSoFar(): Promise<{ runs: string[]; agentJobs: number }> {
  const runs: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await app.redis.scan(cursor, 'MATCH', `${app.prefix}:r:*:run`, 'COUNT', 1000);
    runs.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  const counts = await app.jobCounts('agent');
  return { runs: runs.sort(), agentJobs: Object.values(counts).reduce((a, n) => a + (n ?? 0), 0) };
}

/**
 * A request whose answer must never be a 500 nor carry a stack trace. `json` is the body parsed, as the `T` the
 * caller expects (undefined when the body is not JSON).
 */
async function call<T = unknown>(path: string, init: TestRequestInit = {}, via: Pick<ApiClient, 'request'> = app) {
  const res = await via.request(path, init);
  const text = await res.text();
  expect(res.status, `${init.method ?? 'GET'} ${path} → ${res.status}: ${text.slice(0, 300)}`).toBeLessThan(500);
  expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/);
  let json: T;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined as T;
  }
  return { res, status: res.status, text, json };
}

/** Asserts the contract's error shape and returns the error. */
function errorOf(r: { json: unknown; text: string }) {
  expect(r.json, r.text.slice(0, 300)).toBeTypeOf('object');
  const { error } = r.json as ApiError;
  expect(error).toBeTypeOf('object');
  expect(error.code).toMatch(/^[a-z][a-z0-9_]*$/);
  expect(error.message).toBeTypeOf('string');
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}

/** What the dashboard's API answers about its queues (the fields these tests read). */
type BoardQueues = { queues: Array<{ name: string; jobs: Array<{ name: string }> }> };

const post = (body: unknown, init: TestRequestInit = {}, via: Pick<ApiClient, 'request'> = app) =>
  call<RunObject>('/v1/runs', { method: 'POST', json: body, ...init }, via);

/** Posts a body that must be refused with 400 and returns the fields its details name. */
async function refused(
  body: unknown,
): Promise<{ fields: string[]; details: string; error: { code: string; message: string } }> {
  const r = await post(body);
  expect(r.status, r.text.slice(0, 300)).toBe(400);
  const error = errorOf(r);
  expect(error.code).toBe('validation_error');
  expect(Array.isArray(error.details), 'details is a list of bad fields').toBe(true);
  const details = error.details as Array<{ field: string; message: string }>;
  for (const d of details) {
    expect(d.field).toBeTypeOf('string');
    expect(d.message).toBeTypeOf('string');
  }
  return { fields: details.map((d) => d.field), details: JSON.stringify(details), error };
}

describe('POST /v1/runs validation', () => {
  it.each([
    ['input not a string', { input: 42 }, 'input'],
    ['input empty', { input: '' }, 'input'],
    ['model not a string', { input: 'hi', model: 7 }, 'model'],
    ['instructions not a string', { input: 'hi', instructions: ['be brief'] }, 'instructions'],
    ['max_depth 0', { input: 'hi', max_depth: 0 }, 'max_depth'],
    ['max_depth 101', { input: 'hi', max_depth: 101 }, 'max_depth'],
    ['max_depth not an integer', { input: 'hi', max_depth: 2.5 }, 'max_depth'],
    ['max_depth a string', { input: 'hi', max_depth: '10' }, 'max_depth'],
    ['max_total_tokens 0', { input: 'hi', max_total_tokens: 0 }, 'max_total_tokens'],
    ['timeout_ms negative', { input: 'hi', timeout_ms: -5 }, 'timeout_ms'],
    ['on_budget_exhausted unknown', { input: 'hi', on_budget_exhausted: 'explode' }, 'on_budget_exhausted'],
    ['tools not a list', { input: 'hi', tools: 'crm__*' }, 'tools'],
    ['metadata not an object', { input: 'hi', metadata: 'x' }, 'metadata'],
    ['subagents.enabled not a boolean', { input: 'hi', subagents: { enabled: 'yes' } }, 'subagents.enabled'],
    ['messages not a list', { messages: 'hello' }, 'messages'],
    ['messages empty', { messages: [] }, 'messages'],
  ])('refuses %s, naming the field', async (_label, body, field) => {
    const { fields } = await refused(body);
    expect(fields).toContain(field);
  });

  it('refuses a message with an unknown role, naming its role', async () => {
    const { fields } = await refused({ messages: [{ role: 'wizard', content: 'hi' }] });
    expect(fields).toContain('messages.0.role');
  });

  it('refuses a bad tools glob, naming its position', async () => {
    const { fields } = await refused({ input: 'hi', tools: ['crm__*', 'bad glob!'] });
    expect(fields).toContain('tools.1');
    expect(fields).not.toContain('tools.0');
  });

  it('refuses an unknown field, naming it', async () => {
    const { details } = await refused({ input: 'hi', max_dept: 3 });
    expect(details).toContain('max_dept');
  });

  it('refuses both input and messages', async () => {
    const { fields, error } = await refused({ input: 'hi', messages: [{ role: 'user', content: 'hi' }] });
    expect(fields.some((f) => f === 'input' || f === 'messages')).toBe(true);
    expect(error.message).toMatch(/input/);
    expect(error.message).toMatch(/messages/);
  });

  it('refuses neither input nor messages', async () => {
    const { fields } = await refused({ instructions: 'be brief' });
    expect(fields.some((f) => f === 'input' || f === 'messages')).toBe(true);
  });

  it.each(['not a url', 'ftp://hooks.example.com/x', 'javascript:alert(1)'])('refuses webhook url %s', async (url) => {
    const { fields } = await refused({ input: 'hi', webhook: { url, secret: 'whsec_test' } });
    expect(fields).toContain('webhook.url');
  });

  it.each([
    'http://127.0.0.1:9/hook',
    'http://localhost/hook',
    'http://10.1.2.3/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/hook',
  ])('refuses a webhook to a private or loopback address (%s) without WEBHOOK_ALLOW_PRIVATE', async (url) => {
    const { fields } = await refused({ input: 'hi', webhook: { url, secret: 'whsec_test' } });
    expect(fields).toContain('webhook.url');
  });

  it('names every bad field of one request', async () => {
    const { fields } = await refused({ input: 5, max_depth: 0, on_budget_exhausted: 'nope', tools: ['ok', 'no way'] });
    expect(fields).toEqual(expect.arrayContaining(['input', 'max_depth', 'on_budget_exhausted', 'tools.1']));
  });

  it.each([
    ['a list', []],
    ['a string', 'hello'],
    ['null', null],
    ['a number', 42],
  ])('refuses a JSON body that is %s with 400', async (_label, body) => {
    const r = await post(body);
    expect(r.status).toBe(400);
    errorOf(r);
  });

  it('refuses invalid JSON with 400 invalid_json', async () => {
    const r = await call('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"input": "hi",',
    });
    expect(r.status).toBe(400);
    expect(errorOf(r).code).toBe('invalid_json');
  });

  it('refuses an empty body with 400 invalid_json', async () => {
    const r = await call('/v1/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
    expect(r.status).toBe(400);
    expect(errorOf(r).code).toBe('invalid_json');
  });

  it('refuses a body that is not JSON by content type, in the error shape', async () => {
    const r = await call('/v1/runs', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'input=hi' });
    expect(r.status).toBe(415);
    const error = errorOf(r);
    expect(error.code).toBe('unsupported_media_type');
    expect(error.message).toMatch(/json/i);
  });

  it('refuses a form post, in the error shape', async () => {
    const r = await call('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'input=hi',
    });
    expect(r.status).toBe(415);
    expect(errorOf(r).code).toBe('unsupported_media_type');
  });

  it('answers a body over MAX_BODY_BYTES with 413', async () => {
    const r = await post({ input: 'hi', metadata: { blob: 'x'.repeat(MAX_BODY + 1024) } });
    expect(r.status).toBe(413);
    expect(errorOf(r).code).toBe('payload_too_large');
  });

  it('answers input over MAX_INPUT_BYTES with 413 naming input', async () => {
    const r = await post({ input: 'x'.repeat(MAX_INPUT + 100) });
    expect(r.status).toBe(413);
    const error = errorOf(r);
    expect(error.message).toContain('input');
    expect(JSON.stringify(error.details ?? {})).toContain('input');
  });

  it('counts input and instructions together against MAX_INPUT_BYTES', async () => {
    const half = 'y'.repeat(MAX_INPUT / 2 + 100);
    const r = await post({ input: half, instructions: half });
    expect(r.status).toBe(413);
    expect(errorOf(r).message).toContain('instructions');
  });

  it('answers messages over MAX_INPUT_BYTES with 413 naming messages', async () => {
    const r = await post({ messages: [{ role: 'user', content: 'z'.repeat(MAX_INPUT + 100) }] });
    expect(r.status).toBe(413);
    expect(errorOf(r).message).toContain('messages');
  });

  it('answers context over MAX_CONTEXT_BYTES with 413 naming context', async () => {
    const r = await post({ input: 'hi', context: [{ name: 'a.md', text: 'c'.repeat(MAX_CONTEXT + 100) }] });
    expect(r.status).toBe(413);
    expect(errorOf(r).message).toContain('context');
  });

  it('accepts input just under MAX_INPUT_BYTES', async () => {
    const r = await post({ input: 'x'.repeat(MAX_INPUT - 100) });
    expect(r.status).toBe(202);
  });
});

describe('POST /v1/runs idempotency', () => {
  it('returns the same run for a repeated Idempotency-Key and 409 for a different body', async () => {
    const key = `idem-${Date.now()}`;
    const first = await post({ input: 'idempotent please' }, { headers: { 'idempotency-key': key } });
    expect(first.status).toBe(202);
    const second = await post({ input: 'idempotent please' }, { headers: { 'idempotency-key': key } });
    expect(second.status).toBe(200);
    expect(second.json.id).toBe(first.json.id);
    const other = await post({ input: 'a different request' }, { headers: { 'idempotency-key': key } });
    expect(other.status).toBe(409);
    errorOf(other);
  });
});

describe('GET /v1/runs/:id', () => {
  it('404s an unknown run in the error shape', async () => {
    const r = await call('/v1/runs/run_000000000aaaaaaaaaaaa');
    expect(r.status).toBe(404);
    expect(errorOf(r).code).toBe('not_found');
  });

  it.each([
    ['a word', 'garbage'],
    ['a bare prefix', 'run_'],
    ['an encoded path traversal', 'run_%2e%2e%2f%2e%2e'],
    ['a 5000-character id', 'x'.repeat(5000)],
    ['quotes and spaces', encodeURIComponent("run_' OR 1=1 --")],
    ['a NUL byte', '%00'],
    ['a bad percent escape', '%E0%A4%A'],
  ])('404s a garbage id (%s)', async (_label, id) => {
    const r = await call(`/v1/runs/${id}`);
    expect(r.status).toBe(404);
    errorOf(r);
  });

  it('returns the transcript whole, in order, as it was given (written from the stored JSON, never parsed)', async () => {
    const messages = Array.from({ length: 100 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: `message ${i} ✓ "quoted" \\ ${'x'.repeat(i)}`,
    }));
    const run = await app.createRun({ messages });
    const r = await call(`/v1/runs/${run.id}/messages`);
    expect(r.status).toBe(200);
    expect(r.res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(r.text)).toEqual({ data: messages });
  });

  it.each(['messages', 'steps', 'children', 'events'])('404s /%s of an unknown run', async (sub) => {
    const r = await call(`/v1/runs/run_000000000aaaaaaaaaaaa/${sub}`);
    expect(r.status).toBe(404);
    errorOf(r);
  });
});

describe('GET /v1/runs query', () => {
  it.each(['?limit=0', '?limit=101', '?limit=abc', '?status=bogus', '?after=garbage'])(
    'refuses %s with 400 naming the parameter',
    async (q) => {
      const r = await call(`/v1/runs${q}`, { key: KEY_LIST });
      expect(r.status).toBe(400);
      const error = errorOf(r);
      const name = q.slice(1).split('=')[0];
      expect(JSON.stringify(error.details ?? error.message)).toContain(name);
    },
  );
});

describe('health, the dashboard and unknown routes', () => {
  it('answers /healthz and /readyz with 200, without a key', async () => {
    expect((await call('/healthz', { key: null })).status).toBe(200);
    expect((await call('/readyz', { key: null })).status).toBe(200);
  });

  it.each(['/admin/queues/', '/admin/queues'])(
    'serves the Bull Board dashboard HTML at %s (following redirects)',
    async (path) => {
      const r = await call(path, { key: KEY_ADMIN });
      expect(r.status).toBe(200);
      expect(r.res.headers.get('content-type')).toMatch(/text\/html/);
      expect(r.text).toMatch(/<html/i);
    },
  );

  it('serves the scripts and styles the dashboard page loads', async () => {
    const page = await call('/admin/queues/queue/agent', { key: KEY_ADMIN });
    expect(page.status).toBe(200);
    const assets = [...page.text.matchAll(/(?:src|href)="(static\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(0);
    for (const asset of assets) {
      const r = await app.request(`/admin/queues/${asset}`, { key: KEY_ADMIN });
      expect(r.status, asset).toBe(200);
      await r.arrayBuffer();
    }
  });

  it('404s an unknown route in the error shape', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['GET', '/v1/nope'],
      ['DELETE', '/v1/runs'],
      ['POST', '/v1/tools'],
    ]) {
      const r = await call(path, { method });
      expect(r.status, `${method} ${path}`).toBe(404);
      errorOf(r);
    }
  });
});

describe("GET /v1/runs/:id/events without a Node server (app.request(): hono's stream)", () => {
  it('sends the history, then the live events, and ends after the terminal one', async () => {
    const run = await app.createRun({ input: 'followed through hono' }, KEY_A);
    const res = await app.request(`/v1/runs/${run.id}/events`, { key: KEY_A });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const seen: string[] = [];
    const events = readSse(res, {
      stopAfter: (e) => {
        seen.push(e.event);
        return false;
      },
    });
    await waitFor(() => seen.includes('run.queued'), { what: 'the history' });
    // No worker here: the run is still queued, and its cancel is a live event.
    expect((await call(`/v1/runs/${run.id}/cancel`, { method: 'POST', key: KEY_A })).status).toBe(202);
    const all = await events;
    expect(all.map((e) => e.event)).toEqual(['run.queued', 'run.cancelled']);
    expect(all[1].data).toMatchObject({ run_id: run.id });
    expect(all[0].id && all[1].id && all[0].id < all[1].id).toBe(true);
  });
});

describe('auth and tenancy', () => {
  it.each([
    '/v1/runs',
    '/v1/tools',
    '/v1/runs/run_000000000aaaaaaaaaaaa',
    '/admin/queues/',
    '/admin/queues/api/queues',
  ])('401s %s without a key, in the error shape', async (path) => {
    const r = await call(path, { key: null });
    expect(r.status).toBe(401);
    expect(errorOf(r).code).toBe('unauthorized');
  });

  it('401s a POST without a key and creates nothing', async () => {
    const before = await storedSoFar();
    const r = await call('/v1/runs', { method: 'POST', json: { input: 'sneaky' }, key: null });
    expect(r.status).toBe(401);
    errorOf(r);
    expect(await storedSoFar()).toEqual(before);
    // The same request with a key does create a run, and the probe sees it.
    expect((await post({ input: 'sneaky' })).status).toBe(202);
    const after = await storedSoFar();
    expect(after.runs).toHaveLength(before.runs.length + 1);
    expect(after.agentJobs).toBe(before.agentJobs + 1);
  });

  it.each([
    ['a wrong key', { authorization: 'Bearer not-a-real-key-123' }],
    ['a key prefix', { authorization: `Bearer ${KEY_A.slice(0, -1)}` }],
    ['a key with a suffix', { authorization: `Bearer ${KEY_A}x` }],
    ['Basic auth', { authorization: `Basic ${Buffer.from(`u:${KEY_A}`).toString('base64')}` }],
    ['the bare key', { authorization: KEY_A }],
    ['an empty bearer', { authorization: 'Bearer ' }],
  ])('401s %s', async (_label, headers) => {
    const r = await call('/v1/runs', { key: null, headers });
    expect(r.status).toBe(401);
    errorOf(r);
  });

  it('hides a run of key A from key B (404, not 403) and from its list', async () => {
    const run = await app.createRun({ input: 'private to A' }, KEY_A);
    expect((await call(`/v1/runs/${run.id}`, { key: KEY_A })).status).toBe(200);
    for (const sub of ['', '/messages', '/steps', '/children', '/events']) {
      const r = await call(`/v1/runs/${run.id}${sub}`, { key: KEY_B });
      expect(r.status, sub).toBe(404);
      expect(errorOf(r).code).toBe('not_found');
      expect(r.text).not.toContain('private to A');
    }
    const cancel = await call(`/v1/runs/${run.id}/cancel`, { method: 'POST', key: KEY_B });
    expect(cancel.status).toBe(404);
    const listB = await call<GetBody<'/v1/runs'>>('/v1/runs?limit=100', { key: KEY_B });
    expect(listB.status).toBe(200);
    expect(listB.json.data.map((r) => r.id)).not.toContain(run.id);
    const listA = await call<GetBody<'/v1/runs'>>('/v1/runs?limit=100', { key: KEY_A });
    expect(listA.json.data.map((r) => r.id)).toContain(run.id);
  });
});

describe('no default model', () => {
  let noModel: TestApp;
  beforeAll(async () => {
    noModel = await startApp({ env: { MODEL: '' } });
  });
  afterAll(async () => noModel?.close());

  it('400s a run without model, naming model', async () => {
    const res = await noModel.request('/v1/runs', { method: 'POST', json: { input: 'hi' } });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; details?: unknown } };
    expect(body.error.code).toBe('validation_error');
    expect(JSON.stringify(body.error.details)).toContain('model');
  });
});

describe('dashboard keys (ADMIN_API_KEYS)', () => {
  const TENANT = 'tenant-key-123456';
  const ADMIN = 'admin-key-abcdef99';
  let admin: TestApp;
  beforeAll(async () => {
    admin = await startApp({ apiKey: TENANT, env: { ADMIN_API_KEYS: ADMIN } });
  });
  afterAll(async () => admin?.close());

  it('opens the dashboard to admin keys only (an API key gets 403); an admin key is not an API key', async () => {
    expect((await admin.request('/admin/queues/', { key: TENANT })).status).toBe(403);
    expect((await admin.request('/admin/queues/api/queues', { key: TENANT })).status).toBe(403);
    expect((await admin.request('/admin/queues/', { key: 'not-a-key-0123456789' })).status).toBe(401);
    expect((await admin.request('/admin/queues/', { key: ADMIN })).status).toBe(200);
    expect((await admin.request('/v1/runs', { key: ADMIN })).status).toBe(401);
    expect((await admin.request('/v1/runs', { key: TENANT })).status).toBe(200);
  });
});

describe('with workers: runs that finish', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ handler, apiKey: KEY_A, env });
  });
  afterAll(async () => stack?.close());

  describe('POST /v1/runs acceptance', () => {
    it('answers 202 with the run and a Location header that leads to it', async () => {
      const r = await post({ input: 'hello there', metadata: { ticket: 7 } }, {}, stack);
      expect(r.status).toBe(202);
      const run = r.json;
      expect(run).toMatchObject({
        object: 'run',
        status: 'queued',
        model: 'scripted',
        depth: 0,
        max_depth: 10,
        parent_run_id: null,
        root_run_id: run.id,
        metadata: { ticket: 7 },
      });
      expect(run.id).toMatch(/^run_/);
      const location = r.res.headers.get('location');
      expect(location).toBeTruthy();
      const again = await call<RunObject>(new URL(location!, stack.api.url).pathname, {}, stack);
      expect(again.status).toBe(200);
      expect(again.json.id).toBe(run.id);
      const done = await stack.waitForRun(run.id);
      expect(done.status).toBe('completed');
    });
  });

  describe('GET /v1/runs', () => {
    const list = (query: string) => call<GetBody<'/v1/runs'>>(`/v1/runs${query}`, { key: KEY_LIST }, stack);
    let created: string[] = [];
    const failing: string[] = [];

    beforeAll(async () => {
      created = [];
      for (let i = 0; i < 7; i++) {
        const text = i % 3 === 0 ? `fail: number ${i}` : `list number ${i}`;
        const run = await stack.createRun({ input: text }, KEY_LIST);
        created.push(run.id);
        if (i % 3 === 0) failing.push(run.id);
        // Ids are ordered by creation time in ms; keep creations in distinct milliseconds.
        await new Promise((r) => setTimeout(r, 3));
      }
      for (const id of created) await stack.waitForRun(id, { key: KEY_LIST });
    });

    it('lists the runs newest first', async () => {
      const r = await list('?limit=100');
      expect(r.status).toBe(200);
      expect(r.json.data.map((run) => run.id)).toEqual([...created].reverse());
      expect(r.json.next).toBeNull();
      expect(r.json.data[0]).toMatchObject({ object: 'run' });
    });

    it('pages with limit and after/next, covering every run exactly once', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 10; page++) {
        const r = await list(`?limit=3${cursor ? `&after=${cursor}` : ''}`);
        expect(r.status).toBe(200);
        expect(r.json.data.length).toBeLessThanOrEqual(3);
        seen.push(...r.json.data.map((run) => run.id));
        cursor = r.json.next;
        if (!cursor) break;
      }
      expect(cursor).toBeNull();
      expect(seen).toEqual([...created].reverse());
    });

    it('gives next: null on the last page', async () => {
      const r = await list(`?limit=${created.length}`);
      expect(r.json.data).toHaveLength(created.length);
      expect(r.json.next).toBeNull();
    });

    it('filters by status', async () => {
      const failed = await list('?status=failed&limit=100');
      expect(failed.status).toBe(200);
      expect(failed.json.data.map((run) => run.id)).toEqual([...failing].reverse());
      for (const run of failed.json.data) expect(run.status).toBe('failed');
      const completed = await list('?status=completed&limit=100');
      expect(completed.json.data.map((run) => run.id)).toEqual(created.filter((id) => !failing.includes(id)).reverse());
      const queued = await list('?status=queued');
      expect(queued.json.data).toEqual([]);
    });

    it('pages a status filter without repeats or gaps', async () => {
      const want = created.filter((id) => !failing.includes(id)).reverse();
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 10; page++) {
        const r = await list(`?status=completed&limit=2${cursor ? `&after=${cursor}` : ''}`);
        seen.push(...r.json.data.map((run) => run.id));
        cursor = r.json.next;
        if (!cursor) break;
      }
      expect(seen).toEqual(want);
    });
  });

  describe('tools and the dashboard', () => {
    it('lists the MCP tools as <server>__<tool> with input_schema and server', async () => {
      // The tool-worker publishes its catalog once its MCP servers are connected.
      const tools = await waitFor(
        async () => {
          const r = await call<GetBody<'/v1/tools'>>('/v1/tools', {}, stack);
          expect(r.status).toBe(200);
          return r.json.data.some((t) => t.name === 'crm__get_contact') ? r.json.data : undefined;
        },
        { what: 'crm__get_contact in /v1/tools', intervalMs: 50 },
      );
      const crm = tools.filter((t) => t.name.startsWith('crm__'));
      expect(crm.map((t) => t.name)).toEqual(
        expect.arrayContaining(['crm__search_contacts', 'crm__get_contact', 'crm__update_contact']),
      );
      for (const t of crm) {
        expect(t.server).toBe('crm');
        expect(t.description).toBeTypeOf('string');
        expect(t.input_schema).toMatchObject({ type: 'object' });
      }
      expect(crm.find((t) => t.name === 'crm__get_contact')?.input_schema.properties).toHaveProperty('id');
    });

    it('lists the agent, tool and webhook queues in the dashboard API, with jobs named by run and step/tool', async () => {
      const run = await stack.createRun({ input: 'tool: get Bob' });
      const done = await stack.waitForRun(run.id);
      expect(done.status).toBe('completed');

      const r = await call<BoardQueues>('/admin/queues/api/queues', { key: KEY_ADMIN }, stack);
      expect(r.status).toBe(200);
      const names = r.json.queues.map((q) => q.name);
      expect(names).toEqual(expect.arrayContaining(['agent', 'tool', 'webhook']));

      const jobsOf = async (queue: string) => {
        const res = await call<BoardQueues>(
          `/admin/queues/api/queues?activeQueue=${queue}&status=completed&jobsPerPage=1000`,
          { key: KEY_ADMIN },
          stack,
        );
        expect(res.status).toBe(200);
        return res.json.queues.find((q) => q.name === queue)!.jobs.map((j) => j.name);
      };
      const agentJobs = (await jobsOf('agent')).filter((n) => n.includes(run.id));
      expect(agentJobs.some((n) => /step 0/.test(n))).toBe(true);
      expect(agentJobs.some((n) => /step 1/.test(n))).toBe(true);
      const toolJobs = (await jobsOf('tool')).filter((n) => n.includes(run.id));
      expect(toolJobs.some((n) => n.includes('crm__get_contact'))).toBe(true);
    });
  });

  describe('no default model', () => {
    let noModelStack: Stack;
    beforeAll(async () => {
      noModelStack = await startStack({ handler, env: { MODEL: '' } });
    });
    afterAll(async () => noModelStack?.close());

    it('accepts a run that names its model', async () => {
      const run = await noModelStack.createRun({ input: 'hi', model: 'scripted' });
      expect(run.model).toBe('scripted');
      expect((await noModelStack.waitForRun(run.id)).status).toBe('completed');
    });
  });
});

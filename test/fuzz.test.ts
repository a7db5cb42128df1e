import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@agentq/shared/core';
import { parseEnv } from '@agentq/shared/infra';
import { apiEnvSchema } from '@agentq/api';
import { agentWorkerEnvSchema } from '@agentq/agent-worker';
import { parseMcpConfig, toolWorkerEnvSchema } from '@agentq/tool-worker';
import { startApp, type TestApp } from './fixtures/app.js';

// The API alone, through its Hono app: bad input is the API's to refuse, no worker is involved.
let app: TestApp;
beforeAll(async () => {
  app = await startApp({
    apiKey: 'fuzz-key-123456',
    env: { MAX_BODY_BYTES: String(256 * 1024), MAX_INPUT_BYTES: String(64 * 1024) },
  });
});
afterAll(async () => app?.close());

function expectErrorShape(status: number, text: string) {
  expect(status, text.slice(0, 300)).toBeLessThan(500);
  if (status >= 400) {
    const body = JSON.parse(text);
    expect(typeof body.error.code).toBe('string');
    expect(body.error.code).toMatch(/^[a-z_]+$/);
    expect(typeof body.error.message).toBe('string');
    expect(body.error.message.length).toBeGreaterThan(0);
    expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/); // no stack trace
  }
}

const fields = [
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
];
const unicode = fc.string({ unit: 'grapheme', maxLength: 200 });
const wild = fc.oneof(
  fc.anything({ maxDepth: 3 }),
  unicode,
  fc.integer(),
  fc.double(),
  fc.constant(null),
  fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 5 }),
);
const runBody = fc.oneof(
  // Every field present with a value of any type.
  fc.record(Object.fromEntries(fields.map((f) => [f, wild])), { requiredKeys: [] }),
  // A valid-looking request with one field made wrong.
  fc.tuple(fc.constantFrom(...fields), wild).map(([f, v]) => ({ input: 'hello', [f]: v })),
  // Messages of every shape.
  fc
    .array(
      fc.record(
        {
          role: fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer'), unicode),
          content: wild,
          tool_calls: wild,
          tool_call_id: wild,
        },
        { requiredKeys: [] },
      ),
      { maxLength: 4 },
    )
    .map((messages) => ({ messages })),
  fc.anything({ maxDepth: 4 }),
);

describe('bad input never gets a 5xx', () => {
  it('POST /v1/runs with thousands of malformed, wrongly typed and unicode-heavy bodies', async () => {
    await fc.assert(
      fc.asyncProperty(runBody, async (body) => {
        const text = JSON.stringify(body) ?? 'undefined';
        const res = await app.request('/v1/runs', {
          method: 'POST',
          body: text,
          headers: { 'content-type': 'application/json' },
        });
        expectErrorShape(res.status, await res.text());
      }),
      { numRuns: 1500 },
    );
  });

  it('bodies that are not JSON, oversized, or sent with odd content types', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          unicode,
          fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('latin1')),
          fc.constant('{"input": "x"'),
          fc.constant('x'.repeat(300 * 1024)),
          fc.constant(JSON.stringify({ input: 'x'.repeat(70 * 1024) })),
        ),
        fc.constantFrom(
          'application/json',
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/json; charset=utf-16',
          '',
        ),
        async (body, type) => {
          const res = await app.request('/v1/runs', {
            method: 'POST',
            body,
            headers: type ? { 'content-type': type } : {},
          });
          expectErrorShape(res.status, await res.text());
        },
      ),
      { numRuns: 400 },
    );
  });

  it('odd paths, methods, queries and headers', async () => {
    const seg = fc.oneof(
      unicode.map(encodeURIComponent),
      fc.constantFrom('run_0000000000000000000000', 'run_', '..', '%00', '%ZZ', 'events', 'cancel', 'steps'),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
        fc.array(seg, { minLength: 0, maxLength: 4 }),
        fc.dictionary(
          fc.constantFrom('limit', 'after', 'status', 'last_event_id', 'x'),
          unicode.map(encodeURIComponent),
          { maxKeys: 3 },
        ),
        fc.record(
          {
            'last-event-id': fc
              .string({ unit: 'binary-ascii', maxLength: 40 })
              .map((s) => s.replace(/[^\x20-\x7e]/g, '')),
            'idempotency-key': fc.string({ maxLength: 300 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
          },
          { requiredKeys: [] },
        ),
        async (method, segs, query, headers) => {
          const qs = Object.entries(query)
            .map(([k, v]) => `${k}=${v}`)
            .join('&');
          const path = `/v1/runs${segs.length ? '/' + segs.join('/') : ''}${qs ? `?${qs}` : ''}`;
          const res = await app
            .request(path, { method, headers, signal: AbortSignal.timeout(2000) })
            .catch((e) => e as Error);
          if (res instanceof Error) {
            // An events stream of an existing run stays open: only timeouts on SSE are fine.
            expect(path).toContain('events');
            return;
          }
          if ((res.headers.get('content-type') ?? '').includes('event-stream')) return void (await res.body?.cancel());
          expectErrorShape(res.status, await res.text());
        },
      ),
      { numRuns: 800 },
    );
  });

  it('wrong or missing API keys', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constant(undefined),
          fc.string({ maxLength: 100 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
        ),
        async (auth) => {
          const res = await app.request('/v1/runs', {
            key: null,
            headers: auth === undefined ? {} : { authorization: auth },
          });
          expect(res.status).toBe(401);
          expectErrorShape(res.status, await res.text());
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('bad configuration gives a one-line message per problem, never a crash', () => {
  const names = [
    'REDIS_URL',
    'QUEUE_PREFIX',
    'LOG_LEVEL',
    'PORT',
    'API_KEYS',
    'OPENAI_BASE_URL',
    'AGENT_CONCURRENCY',
    'TOOL_CONCURRENCY',
    'TOOL_TIMEOUT_MS',
    'WEBHOOK_ALLOW_PRIVATE',
    'MAX_BODY_BYTES',
    'JOB_LOCK_MS',
  ];
  it.each([
    ['api', apiEnvSchema],
    ['agent-worker', agentWorkerEnvSchema],
    ['tool-worker', toolWorkerEnvSchema],
  ] as const)('%s environment', (_name, schema) => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.constantFrom(...names),
          fc.oneof(
            unicode,
            fc.integer().map(String),
            fc.constantFrom('0', '-1', 'true', 'yes', 'redis://', 'http://x', '1e99'),
          ),
        ),
        (env) => {
          try {
            parseEnv(schema, env);
          } catch (err) {
            expect(err).toBeInstanceOf(ConfigError);
            for (const line of (err as ConfigError).problems) {
              expect(line).not.toContain('\n');
              expect(line).toMatch(/^[A-Z_]+: /);
            }
          }
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('mcp.json', () => {
    const server = fc.record(
      { command: wild, args: wild, env: wild, url: fc.oneof(wild, fc.webUrl()), headers: wild, timeout_ms: wild },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything({ maxDepth: 4 }),
          fc.record({ mcpServers: fc.oneof(wild, fc.dictionary(unicode, server, { maxKeys: 3 })) }),
        ),
        (json) => {
          try {
            parseMcpConfig(json, 'mcp.json');
          } catch (err) {
            expect(err).toBeInstanceOf(ConfigError);
            for (const line of (err as ConfigError).problems) expect(line).toMatch(/^mcp\.json/);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});

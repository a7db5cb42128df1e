import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { type WebhookDelivery } from '@agentq/shared/core';
import { createLogger, type Resolver } from '@agentq/shared/infra';
import type { Handler } from '@agentq/scripted-llm';
import { EventHub } from '../services/api/src/event-hub.js';
import { startStack, type Stack } from './fixtures/services.js';
import { readSse, type SseEvent } from './fixtures/sse.js';
import { waitFor } from './fixtures/wait.js';

// Issue 16, findings 10, 11 and 13: what one caller must not reach or break. Each part starts
// its own stack (its own QUEUE_PREFIX) on the suite's Redis; everything stays on loopback.

const answer: Handler = (req) => ({ content: `ok: ${String(req.messages.at(-1)?.content ?? '').slice(0, 40)}` });

/** Asserts the contract's error shape and returns the error. */
async function errorOf(res: Response) {
  const text = await res.text();
  expect(text).not.toMatch(/\n\s+at .+:\d+:\d+/);
  const body = JSON.parse(text);
  expect(body.error.code).toMatch(/^[a-z][a-z0-9_]*$/);
  expect(body.error.message).toBeTypeOf('string');
  return body.error as { code: string; message: string; details?: Array<{ field: string; message: string }> };
}

describe('the dashboard with API_KEYS set and ADMIN_API_KEYS unset (finding 13)', () => {
  const TENANT_A = 'tenant-a-0123456789';
  const TENANT_B = 'tenant-b-0123456789';
  const paths = [
    '/admin/queues',
    '/admin/queues/',
    '/admin/queues/queue/agent',
    '/admin/queues/api/queues',
    '/admin/queues/api/queues?activeQueue=agent&status=completed&jobsPerPage=1000',
  ];
  let stack: Stack;
  let secret: string;
  beforeAll(async () => {
    stack = await startStack({ handler: answer, apiKey: TENANT_A, env: { API_KEYS: `${TENANT_A},${TENANT_B}` } });
    // Another tenant's run, whose input the dashboard would show.
    secret = `tenant B's secret input ${Date.now()}`;
    const run = await stack.createRun({ input: secret }, TENANT_B);
    expect((await stack.waitForRun(run.id, { key: TENANT_B })).status).toBe('completed');
  });
  afterAll(async () => stack?.close());

  it.each(paths)('refuses %s to every API key with 403, saying how to open it', async (path) => {
    for (const key of [TENANT_A, TENANT_B]) {
      const res = await stack.request(path, { key });
      expect(res.status, `${path} with a tenant's key`).toBe(403);
      const text = await res.clone().text();
      expect(text).not.toContain(secret);
      const error = await errorOf(res);
      expect(error.code).toBe('forbidden');
      expect(error.message).toContain('ADMIN_API_KEYS');
    }
  });

  it("refuses the dashboard API's writes as well, and still 401s a missing or wrong key", async () => {
    for (const method of ['PUT', 'POST', 'DELETE']) {
      const res = await stack.request('/admin/queues/api/queues/agent/clean/completed', { method, key: TENANT_A });
      expect(res.status, method).toBe(403);
      await errorOf(res);
    }
    for (const key of [null, 'not-a-key-0123456789']) {
      const res = await stack.request('/admin/queues/', { key });
      expect(res.status).toBe(401);
      expect((await errorOf(res)).code).toBe('unauthorized');
    }
    // The API itself is unchanged for those keys.
    expect((await stack.request('/v1/runs', { key: TENANT_A })).status).toBe(200);
  });
});

describe('the dashboard to a key TENANTS_CONFIG marks admin', () => {
  const OPERATOR = 'operator-0123456789';
  const TENANT = 'tenant-c-0123456789';
  const dir = mkdtempSync(join(tmpdir(), 'agentq-admin-'));
  let stack: Stack;
  beforeAll(async () => {
    const sha = (k: string) => createHash('sha256').update(k).digest('hex');
    writeFileSync(
      join(dir, 'tenants.json'),
      JSON.stringify({
        keys: {
          operator: { key_sha256: sha(OPERATOR), admin: true },
          tenant: { key_sha256: sha(TENANT), admin: false },
        },
      }),
    );
    stack = await startStack({
      handler: answer,
      apiKey: TENANT,
      env: { API_KEYS: `${OPERATOR},${TENANT}`, TENANTS_CONFIG: join(dir, 'tenants.json') },
    });
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens to that key only, without ADMIN_API_KEYS', async () => {
    expect((await stack.request('/admin/queues/api/queues', { key: OPERATOR })).status).toBe(200);
    const refused = await stack.request('/admin/queues/api/queues', { key: TENANT });
    expect(refused.status).toBe(403);
    expect((await errorOf(refused)).message).toContain('TENANTS_CONFIG');
  });
});

describe('the dashboard of an open service (API_KEYS unset)', () => {
  let open: Stack;
  beforeAll(async () => {
    open = await startStack({ handler: answer });
  });
  afterAll(async () => open?.close());

  it('stays open, as the whole API is', async () => {
    const page = await open.request('/admin/queues/');
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<html/i);
    const api = await open.request('/admin/queues/api/queues');
    expect(api.status).toBe(200);
    expect(((await api.json()) as { queues: Array<{ name: string }> }).queues.map((q) => q.name)).toEqual(
      expect.arrayContaining(['agent', 'tool', 'webhook']),
    );
  });
});

describe('a hostile Last-Event-ID (finding 10)', () => {
  // Run A: two tool rounds, then an answer streamed word by word: a steady flow of events.
  const handler: Handler = (req) => {
    const rounds = req.messages.filter((m) => m.role === 'assistant').length;
    const user = String(req.messages.find((m) => m.role === 'user')?.content ?? '');
    if (!user.startsWith('A')) return { content: 'B is done' };
    if (rounds < 2) return { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 200, label: `a-${rounds}` } }] };
    return { content: Array.from({ length: 40 }, (_, i) => `word${i}`).join(' '), chunkDelayMs: 20 };
  };
  // Ids Redis refuses (a part past 64 bits), malformed ones, and one past the stream's end.
  const hostile = [
    '1-99999999999999999999999',
    '18446744073709551616-0',
    '0-18446744073709551616',
    '99999999999999999999999-1',
    '18446744073709551615-18446744073709551615',
    '-1-0',
    '1--1',
    '1-0-0',
  ];
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ handler });
  });
  afterAll(async () => stack?.close());

  /** A hostile resume of run B: its status and body (an SSE 200, if one comes, is read to its end). */
  async function resume(runId: string, how: 'header' | 'query', id: string) {
    const path =
      how === 'header'
        ? `/v1/runs/${runId}/events`
        : `/v1/runs/${runId}/events?last_event_id=${encodeURIComponent(id)}`;
    const res = await stack.request(path, {
      headers: how === 'header' ? { 'last-event-id': id } : {},
      signal: AbortSignal.timeout(5_000),
    });
    if (res.status === 200) return { how, id, status: 200, body: JSON.stringify(await readSse(res).catch(() => [])) };
    return { how, id, status: res.status, body: await res.text() };
  }

  it("400s each, naming the header or the parameter, and run A's subscriber gets every event in order meanwhile", async () => {
    const b = await stack.createRun({ input: 'B' });
    expect((await stack.waitForRun(b.id)).status).toBe('completed');

    const a = await stack.createRun({ input: 'A: stream' });
    const receivedAt = new Map<string, number>();
    const aStream = stack.request(`/v1/runs/${a.id}/events`).then((res) =>
      readSse(res, {
        stopAfter: (e) => {
          receivedAt.set(e.id!, Date.now());
          return false;
        },
      }),
    );
    let aDone = false;
    void aStream.finally(() => (aDone = true));

    // Hostile resumes of B for as long as A's events flow (at least one full round).
    const answers: Awaited<ReturnType<typeof resume>>[] = [];
    for (let round = 0; round < 100 && (round === 0 || !aDone); round++) {
      for (const id of hostile)
        for (const how of ['header', 'query'] as const) answers.push(await resume(b.id, how, id));
    }
    const seen: SseEvent[] = await aStream;

    // What A's subscriber got: every event of the run, in order, ending with its terminal one.
    const history = await readSse(await stack.request(`/v1/runs/${a.id}/events`));
    expect(seen.map((e) => e.id)).toEqual(history.map((e) => e.id));
    expect(seen.at(-1)!.event).toBe('run.completed');
    expect(seen.filter((e) => e.event === 'message.delta').length).toBeGreaterThan(1);

    // How long each event took from its writer to A's subscriber (reported, not asserted).
    const lags = seen.map((e) => receivedAt.get(e.id!)! - Date.parse(e.data.at)).sort((x, y) => x - y);
    const pct = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))];
    console.info(
      `finding 10: run A's ${lags.length} events reached its subscriber with lag p50 ${pct(0.5)} ms, ` +
        `p95 ${pct(0.95)} ms, max ${lags.at(-1)} ms, beside ${answers.length} hostile resumes of run B`,
    );

    for (const r of answers) {
      expect(r.status, `${r.how} ${r.id} → ${r.status} ${r.body.slice(0, 200)}`).toBe(400);
      expect(r.body).not.toMatch(/\n\s+at .+:\d+:\d+/);
      const error = JSON.parse(r.body).error;
      expect(error.code).toBe('validation_error');
      expect(error.message).toContain(r.how === 'header' ? 'Last-Event-ID' : 'last_event_id');
      expect(error.details[0].field).toBe(r.how === 'header' ? 'Last-Event-ID' : 'last_event_id');
    }

    // B itself still resumes from an id it sent.
    const bEvents = await readSse(await stack.request(`/v1/runs/${b.id}/events`));
    const rest = await readSse(
      await stack.request(`/v1/runs/${b.id}/events`, { headers: { 'last-event-id': bEvents[0].id! } }),
    );
    expect(rest.map((e) => e.id)).toEqual(bEvents.slice(1).map((e) => e.id));
  });
});

describe('the event hub: one stream Redis refuses to read (finding 10)', () => {
  let reader: Redis;
  let control: Redis;
  let hub: EventHub;
  const prefix = `t${randomBytes(4).toString('hex')}:hub`;
  beforeAll(async () => {
    reader = new Redis(inject('redisUrl'));
    control = new Redis(inject('redisUrl'));
    hub = new EventHub(
      reader,
      control,
      createLogger({ service: 'test', level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    );
    hub.start();
  });
  afterAll(async () => {
    await hub?.close();
    await control?.del(`${prefix}:a`, `${prefix}:not-a-stream`);
    reader?.disconnect();
    control?.disconnect();
  });

  it('refuses a position Redis would refuse before it joins the shared read', () => {
    expect(() => hub.subscribe(`${prefix}:c`, '1-99999999999999999999999', () => {})).toThrow(RangeError);
    expect(() => hub.subscribe(`${prefix}:c`, '18446744073709551616-0', () => {})).toThrow(RangeError);
    expect(hub.watchedStreams).toBe(0);
  });

  it("drops a stream Redis cannot read, telling its subscriber, and the other streams' events flow on", async () => {
    const a = `${prefix}:a`;
    const broken = `${prefix}:not-a-stream`;
    await control.set(broken, 'a string: XREAD answers WRONGTYPE');
    const got: string[] = [];
    const unsubscribe = hub.subscribe(a, '0', (events) => got.push(...events.map((e) => e.id)));
    let failed: string | null = null;
    hub.subscribe(
      broken,
      '0',
      () => {},
      (reason) => (failed = reason),
    );

    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await control.xadd(a, '*', 'type', 'message.delta', 'data', JSON.stringify({ text: `${i}` })))!);
    // Bounded only so that the test ends: before the fix the shared read failed forever and A got nothing.
    await waitFor(() => got.length >= ids.length, { what: "stream A's 20 events", timeoutMs: 10_000 });
    expect(got).toEqual(ids);
    expect(failed).toMatch(/WRONGTYPE/);
    expect(hub.watchedStreams).toBe(1);
    unsubscribe();
  });
});

describe('a webhook whose name rebinds to loopback (finding 11)', () => {
  const HOST = 'hooks.rebind.invalid';
  const received: Array<{ url: string; signature: string | undefined }> = [];
  let receiver: Server;
  let port: number;
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      received.push({ url: req.url ?? '', signature: req.headers['webhook-signature'] as string | undefined });
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((r) => receiver.close(() => r())));

  /** Deliveries of a run's webhook, once there are `n`. */
  async function deliveries(stack: Stack, runId: string, n: number): Promise<WebhookDelivery[]> {
    return waitFor(
      async () => {
        const { data } = await stack.getJson(`/v1/runs/${runId}/webhook-deliveries`);
        return data.length >= n ? data : null;
      },
      { what: `${n} webhook attempt(s) of ${runId}`, timeoutMs: 15_000, intervalMs: 50 },
    );
  }

  it('is refused at the connection although the name was public at submission; the attempt is recorded as refused', async () => {
    // The name answers a public address once (the API's check at submission), then loopback:
    // the address the delivery connects to is the one it checks, so it never reaches loopback.
    const asked: string[] = [];
    const rebinding: Resolver = async (host) => {
      asked.push(host);
      return [{ address: asked.length === 1 ? '93.184.215.14' : '127.0.0.1', family: 4 }];
    };
    const stack = await startStack({
      handler: answer,
      resolve: rebinding,
      env: { WEBHOOK_SECRET: 'rebinding-secret', WEBHOOK_BACKOFF_BASE_MS: '50' },
    });
    try {
      const run = await stack.createRun({ input: 'hook me', webhook: { url: `http://${HOST}:${port}/rebound` } });
      expect(asked).toEqual([HOST]);
      expect((await stack.waitForRun(run.id)).status).toBe('completed');
      const [attempt] = await deliveries(stack, run.id, 1);
      expect(attempt).toMatchObject({ success: false, status_code: null, attempt: 1 });
      expect(attempt.error).toMatch(/^refused: .*127\.0\.0\.1/);
      // The delivery asked the resolver itself when it connected, and got loopback.
      expect(asked).toEqual([HOST, HOST]);
      expect(received.filter((r) => r.url === '/rebound')).toEqual([]);
    } finally {
      await stack.close();
    }
  });

  it('connects to the address the resolver gave, so WEBHOOK_ALLOW_PRIVATE=true still reaches a loopback receiver', async () => {
    const loopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const stack = await startStack({
      handler: answer,
      resolve: loopback,
      env: { WEBHOOK_SECRET: 'rebinding-secret', WEBHOOK_ALLOW_PRIVATE: 'true' },
    });
    try {
      const run = await stack.createRun({ input: 'hook me', webhook: { url: `http://${HOST}:${port}/allowed` } });
      expect((await stack.waitForRun(run.id)).status).toBe('completed');
      const [attempt] = await deliveries(stack, run.id, 1);
      expect(attempt).toMatchObject({ success: true, status_code: 204 });
      expect(received.filter((r) => r.url === '/allowed')).toHaveLength(1);
      expect(received.find((r) => r.url === '/allowed')!.signature).toMatch(/^v1,/);
    } finally {
      await stack.close();
    }
  });
});

import { createHmac } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { type RunObject } from '@agentq/shared/core';
import { RunStore } from '@agentq/shared/store';
import { startStack, type Stack } from './fixtures/services.js';
import { readSse } from './fixtures/sse.js';
import { waitFor } from './fixtures/wait.js';
import { bodyOf, errorOf } from './fixtures/api-client.js';

const scenarios = new Map<string, (req: ChatRequest, round: number) => Reply | Promise<Reply>>();
const handler: Handler = (req) => {
  const user = req.messages.find((m) => m.role === 'user')?.content as string;
  const round = req.messages.filter((m) => m.role === 'assistant').length;
  return scenarios.get(user)?.(req, round) ?? { content: `no scenario for ${user}` };
};
/** Job states after which a job runs no more ('unknown': removed). */
const ENDED = ['completed', 'failed', 'unknown'];
const requestsFor = (stack: Stack, user: string) =>
  stack.llm.requests.filter((r) => r.messages.some((m) => m.role === 'user' && m.content === user));

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    handler,
    env: {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_BACKOFF_BASE_MS: '50',
      WEBHOOK_SECRET: 'whsec_' + Buffer.from('the-default-secret').toString('base64'),
    },
  });
});
afterAll(async () => stack?.close());

describe('events (SSE)', () => {
  const user = 'Stream me';
  beforeAll(() => {
    scenarios.set(user, (_req, round) =>
      round === 0
        ? {
            tool_calls: [
              { name: 'crm__sleep', arguments: { ms: 20, label: 'a' } },
              { name: 'crm__search_contacts', arguments: { query: 'Alice' } },
            ],
          }
        : { content: 'Alice Jones works at Globex, as far as the CRM knows.', chunkDelayMs: 25 },
    );
  });

  it('streams every event in order, text before the step ends, and closes after the terminal event', async () => {
    const { id } = await stack.createRun({ input: user });
    const res = await stack.request(`/v1/runs/${id}/events`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await readSse(res); // ends because the server closes the stream
    const types: string[] = events.map((e) => e.event);
    expect(types[0]).toBe('run.queued');
    expect(types.at(-1)).toBe('run.completed');
    expect(types.filter((t) => t === 'run.completed')).toHaveLength(1);
    const order = [
      'run.queued',
      'run.started',
      'step.started',
      'step.completed',
      'tool.started',
      'tool.completed',
      'step.started',
      'message.delta',
      'step.completed',
      'run.completed',
    ];
    let at = -1;
    for (const t of order) {
      const next = types.indexOf(t, at + 1);
      expect(next, `${t} after position ${at} in ${types.join(',')}`).toBeGreaterThan(at);
      at = next;
    }
    expect(types.filter((t) => t === 'tool.completed')).toHaveLength(2);
    // The final text arrived in several deltas (the model streams it over ~250 ms; agentq
    // coalesces deltas per 50 ms), all before that step completed.
    const lastStepDone = types.lastIndexOf('step.completed');
    const deltas = events.slice(0, lastStepDone).filter((e) => e.event === 'message.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((d) => d.data.text).join('')).toBe('Alice Jones works at Globex, as far as the CRM knows.');
    expect(events.at(-1)).toMatchObject({ event: 'run.completed', data: { run: { id, status: 'completed' } } });
    // Ids strictly increase.
    const ids = events.map((e) => e.id!);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('resumes after Last-Event-ID with no duplicates and no gaps', async () => {
    const { id } = await stack.createRun({ input: user });
    await stack.waitForRun(id);
    const all = await readSse(await stack.request(`/v1/runs/${id}/events`));
    const middle = Math.floor(all.length / 2);
    const resumed = await readSse(
      await stack.request(`/v1/runs/${id}/events`, { headers: { 'last-event-id': all[middle].id! } }),
    );
    expect(resumed.map((e) => e.id)).toEqual(all.slice(middle + 1).map((e) => e.id));
    // Resuming after the terminal event: nothing more, and the stream closes.
    const after = await readSse(
      await stack.request(`/v1/runs/${id}/events`, {
        headers: { 'last-event-id': all.at(-1)!.id! },
        signal: AbortSignal.timeout(5000),
      }),
    );
    expect(after).toEqual([]);
  });

  it('resumes a live stream from the middle while the run is still going', async () => {
    const slowUser = 'Stream me slowly';
    scenarios.set(slowUser, (_req, round) =>
      round === 0
        ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 300, label: 'slow' } }] }
        : { content: 'done' },
    );
    const { id } = await stack.createRun({ input: slowUser });
    const first = await readSse(await stack.request(`/v1/runs/${id}/events`), {
      stopAfter: (e) => e.event === 'tool.started',
    });
    const rest = await readSse(
      await stack.request(`/v1/runs/${id}/events`, { headers: { 'last-event-id': first.at(-1)!.id! } }),
    );
    const types = [...first, ...rest].map((e) => e.event);
    expect(types.at(-1)).toBe('run.completed');
    expect(types.filter((t) => t === 'tool.started')).toHaveLength(1);
    expect(rest[0].event).toBe('tool.completed');
  });

  it('serves many subscribers of one run', async () => {
    const { id } = await stack.createRun({ input: user });
    const streams = await Promise.all(
      Array.from({ length: 20 }, () => stack.request(`/v1/runs/${id}/events`).then((r) => readSse(r))),
    );
    const first = streams[0].map((e) => e.id);
    for (const s of streams) expect(s.map((e) => e.id)).toEqual(first);
  });

  it('holds hundreds of open streams on one Redis connection', async () => {
    const slowUser = 'Hold the line';
    scenarios.set(slowUser, () => ({ content: 'released', delayMs: 1500 }));
    const runs = await Promise.all(Array.from({ length: 20 }, () => stack.createRun({ input: slowUser })));
    const controllers = Array.from({ length: 200 }, () => new AbortController());
    const responses = await Promise.all(
      controllers.map((c, i) => stack.request(`/v1/runs/${runs[i % 20].id}/events`, { signal: c.signal })),
    );
    expect(responses.every((r) => r.status === 200)).toBe(true);
    const clients = (await stack.redis.client('LIST')) as string;
    const readers = clients.split('\n').filter((l) => l.includes('name=agentq-api-events'));
    expect(readers).toHaveLength(1);
    // And every stream still ends with its run.
    const ends = await Promise.all(responses.slice(0, 20).map((r) => readSse(r)));
    for (const e of ends) expect(e.at(-1)!.event).toBe('run.completed');
    for (const c of controllers) c.abort();
  });

  it('rejects a malformed Last-Event-ID with a 400', async () => {
    const { id } = await stack.createRun({ input: user });
    const res = await stack.request(`/v1/runs/${id}/events`, { headers: { 'last-event-id': 'garbage' } });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('validation_error');
  });
});

describe('cancel', () => {
  it('cancels during a slow tool call: the call is abandoned and no model call follows', async () => {
    const user = 'Cancel me';
    scenarios.set(user, (_req, round) =>
      round === 0
        ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 5000, label: 'cancel-me' } }] }
        : { content: 'should never be asked' },
    );
    const { id } = await stack.createRun({ input: user });
    const events = readSse(await stack.request(`/v1/runs/${id}/events`));
    await waitFor(() => stack.crm.calls.some((c) => c.args.label === 'cancel-me'), {
      what: 'the tool call to be running',
    });
    // No step follows the call yet: the call's job adds it once the call has ended.
    expect(await stack.stepState(id, 1)).toBe('unknown');
    const res = await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ id, status: 'cancelled', stop_reason: 'cancelled' });
    const types = (await events).map((e) => e.event);
    expect(types.at(-1)).toBe('run.cancelled');
    // The MCP server was told to cancel the call.
    await waitFor(() => stack.crm.aborted.includes('cancel-me'), {
      what: 'the MCP server to be told to cancel the call',
    });
    // The tool job adds the follow-up step before it ends: wait until it has ended, and so has that
    // step (it finds the run cancelled; or the cancel removed it first), then no model call may
    // have followed.
    await waitFor(
      async () => ENDED.includes(await stack.toolJobState(id, 0, 0)) && ENDED.includes(await stack.stepState(id, 1)),
      {
        what: 'the tool job and the step after it to end',
      },
    );
    expect(requestsFor(stack, user)).toHaveLength(1);
    const run = await stack.getJson(`/v1/runs/${id}`);
    expect(run.status).toBe('cancelled');
    // Idempotent: a second cancel returns the run unchanged.
    const again = await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
    expect(again.status).toBe(202);
    expect((await bodyOf<RunObject>(again)).completed_at).toBe(run.completed_at);
  });

  it('cancels during a round of slow calls in one job: every call is abandoned and the job ends', async () => {
    const user = 'Cancel my round';
    const labels = ['round-a', 'round-b', 'round-c'];
    scenarios.set(user, (_req, round) =>
      round === 0
        ? { tool_calls: labels.map((label) => ({ name: 'crm__sleep', arguments: { ms: 5000, label } })) }
        : { content: 'should never be asked' },
    );
    const { id } = await stack.createRun({ input: user });
    await waitFor(() => labels.every((l) => stack.crm.calls.some((c) => c.args.label === l)), {
      what: "the round's three calls to be running",
    });
    expect(await stack.toolJobState(id, 0, 0)).toBe('active');
    const res = await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(202);
    // The MCP server was told to cancel each of them.
    await waitFor(() => labels.every((l) => stack.crm.aborted.includes(l)), {
      what: 'the MCP server to be told to cancel every call',
    });
    await waitFor(
      async () => ENDED.includes(await stack.toolJobState(id, 0, 0)) && ENDED.includes(await stack.stepState(id, 1)),
      {
        what: "the round's job and the step after it to end",
      },
    );
    expect(requestsFor(stack, user)).toHaveLength(1);
    expect((await stack.getJson(`/v1/runs/${id}`)).status).toBe('cancelled');
  });

  it('aborts an in-flight model request', async () => {
    const user = 'Cancel my thinking';
    let aborted = false;
    scenarios.set(user, async (_req) => ({ hang: true }));
    stack.llm.setHandler(async (req, ctx) => {
      const u = req.messages.find((m) => m.role === 'user')?.content;
      if (u === user) ctx.signal.addEventListener('abort', () => (aborted = true));
      return handler(req, ctx);
    });
    try {
      const { id } = await stack.createRun({ input: user });
      await waitFor(() => requestsFor(stack, user).length > 0, { what: 'the model request to arrive' });
      await stack.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
      await waitFor(() => aborted, { what: 'the model request to be aborted' });
      expect((await stack.waitForRun(id)).status).toBe('cancelled');
    } finally {
      stack.llm.setHandler(handler);
    }
  });

  it('returns a finished run unchanged', async () => {
    scenarios.set('Quick', () => ({ content: 'quick' }));
    const run = await stack.waitForRun((await stack.createRun({ input: 'Quick' })).id);
    const res = await stack.request(`/v1/runs/${run.id}/cancel`, { method: 'POST' });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual(run);
  });
});

describe('webhooks', () => {
  let server: Server;
  let url: string;
  const received: Array<{ headers: IncomingMessage['headers']; body: string; status: number }> = [];
  let failFirst = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const status = failFirst-- > 0 ? 503 : 200;
        received.push({ headers: req.headers, body, status });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const verify = (secret: Buffer, h: IncomingMessage['headers'], body: string) => {
    const signed = `${h['webhook-id']}.${h['webhook-timestamp']}.${body}`;
    return h['webhook-signature'] === `v1,${createHmac('sha256', secret).update(signed).digest('base64')}`;
  };

  it('retries a failing receiver, then delivers a signed payload with a stable id', async () => {
    scenarios.set('Hook me', () => ({ content: 'hooked' }));
    received.length = 0;
    failFirst = 2;
    const { id } = await stack.createRun({ input: 'Hook me', webhook: { url, secret: 'raw-secret-123' } });
    await waitFor(() => received.some((r) => r.status === 200), { what: 'a delivery the receiver accepts' });
    expect(received.map((r) => r.status)).toEqual([503, 503, 200]);
    const ids = new Set(received.map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (const r of received) expect(verify(Buffer.from('raw-secret-123'), r.headers, r.body)).toBe(true);
    const payload = JSON.parse(received[2].body);
    expect(payload).toMatchObject({
      type: 'run.completed',
      data: { id, status: 'completed', output: { content: 'hooked' } },
    });
    const deliveries = (await stack.getJson(`/v1/runs/${id}/webhook-deliveries`)).data;
    expect(deliveries.map((d) => [d.attempt, d.status_code, d.success])).toEqual([
      [1, 503, false],
      [2, 503, false],
      [3, 200, true],
    ]);
  });

  it(
    "sends a run's terminal webhook when the process that ended the " +
      "run died before queuing it: the run's next step job queues it",
    async () => {
      const user = 'Hook after a crash';
      let release!: () => void;
      const ended = new Promise<void>((r) => (release = r));
      // The model call is in flight while the run is ended elsewhere, then drops: the step comes again.
      scenarios.set(user, async () => {
        await ended;
        return { drop: true };
      });
      received.length = 0;
      failFirst = 0;
      const { id } = await stack.createRun({ input: user, webhook: { url, secret: 's' } });
      await waitFor(() => requestsFor(stack, user).length === 1, { what: 'the model call' });
      // Ended in Redis by a process that died before it queued the webhook.
      const store = new RunStore({ redis: stack.redis, prefix: stack.prefix, retentionSeconds: 3600 });
      expect(
        await store.runs.finish(id, {
          status: 'completed',
          stopReason: 'stop',
          output: { role: 'assistant', content: 'ended elsewhere' },
        }),
      ).not.toBeNull();
      release();
      await waitFor(() => received.some((r) => r.status === 200), { what: "the run's webhook", timeoutMs: 15_000 });
      expect(received).toHaveLength(1);
      expect(JSON.parse(received[0].body)).toMatchObject({
        type: 'run.completed',
        data: { id, output: { content: 'ended elsewhere' } },
      });
      // Its id is the run's: sent again, it is the same message.
      expect(received[0].headers['webhook-id']).toBe(`whk_${id.slice('run_'.length)}`);
    },
  );

  it('signs with WEBHOOK_SECRET in its whsec_ form when the run gives none', async () => {
    scenarios.set('Hook me by default', () => ({ content: 'hooked' }));
    received.length = 0;
    failFirst = 0;
    await stack.createRun({ input: 'Hook me by default', webhook: { url } });
    await waitFor(() => received.length > 0, { what: 'the webhook' });
    expect(verify(Buffer.from('the-default-secret'), received[0].headers, received[0].body)).toBe(true);
  });

  it('stops retrying on 410 Gone', async () => {
    const gone = createServer((_req, res) => res.writeHead(410).end());
    await new Promise<void>((r) => gone.listen(0, '127.0.0.1', r));
    try {
      scenarios.set('Hook gone', () => ({ content: 'x' }));
      const { id } = await stack.createRun({
        input: 'Hook gone',
        webhook: { url: `http://127.0.0.1:${(gone.address() as AddressInfo).port}/`, secret: 's' },
      });
      const [first] = await waitFor(
        async () => {
          const d = (await stack.getJson(`/v1/runs/${id}/webhook-deliveries`)).data;
          return d.length > 0 ? d : undefined;
        },
        { what: 'the first delivery' },
      );
      // No attempt can follow once the delivery's job has ended: wait for that (a retry would come 50 ms on).
      const job = { runId: id, webhookId: first.webhook_id, type: first.type };
      await waitFor(async () => ['completed', 'failed'].includes(await stack.webhookJobState(job)), {
        what: 'the webhook job to end',
      });
      const deliveries = (await stack.getJson(`/v1/runs/${id}/webhook-deliveries`)).data;
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toMatchObject({ status_code: 410, success: false });
    } finally {
      gone.close();
    }
  });
});

describe('idempotency', () => {
  it('two concurrent requests with one key create one run; another body is a 409', async () => {
    scenarios.set('Once only', () => ({ content: 'once' }));
    const body = { input: 'Once only' };
    const headers = { 'idempotency-key': `key-${Date.now()}` };
    const [a, b] = await Promise.all([
      stack.request('/v1/runs', { method: 'POST', json: body, headers }),
      stack.request('/v1/runs', { method: 'POST', json: body, headers }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 202]);
    const [ra, rb] = [await bodyOf<RunObject>(a), await bodyOf<RunObject>(b)];
    expect(ra.id).toBe(rb.id);
    const later = await stack.request('/v1/runs', { method: 'POST', json: body, headers });
    expect(later.status).toBe(200);
    expect((await bodyOf<RunObject>(later)).id).toBe(ra.id);
    const other = await stack.request('/v1/runs', { method: 'POST', json: { input: 'Something else' }, headers });
    expect(other.status).toBe(409);
    expect((await errorOf(other)).code).toBe('idempotency_key_reused');
    await stack.waitForRun(ra.id);
    expect(requestsFor(stack, 'Once only')).toHaveLength(1);
  });
});

describe('budgets beyond depth', () => {
  // Each call costs 100 tokens (the scripted model reports what it is told).
  const greedy = (req: ChatRequest, round: number): Reply =>
    req.tool_choice === 'none'
      ? { content: `final after ${round} rounds`, usage: { prompt_tokens: 80, completion_tokens: 20 } }
      : {
          tool_calls: [{ name: 'crm__count_calls', arguments: {} }],
          usage: { prompt_tokens: 80, completion_tokens: 20 },
        };

  it.each([
    ['final_answer', 'completed'],
    ['stop', 'incomplete'],
  ] as const)('max_total_tokens under %s', async (policy, status) => {
    const user = `Tokens ${policy}`;
    scenarios.set(user, greedy);
    const run = await stack.waitForRun(
      (await stack.createRun({ input: user, max_total_tokens: 250, on_budget_exhausted: policy })).id,
    );
    expect(run).toMatchObject({ status, stop_reason: 'max_total_tokens' });
    // 100 tokens a call: after 3 calls (300 ≥ 250) the budget is hit before the 4th step.
    expect(run.depth).toBe(3);
    expect(run.usage.model_calls).toBe(policy === 'final_answer' ? 4 : 3);
    if (policy === 'final_answer') expect(run.output?.content).toBe('final after 3 rounds');
    else expect(run.output).toBeNull();
  });

  it.each([
    ['final_answer', 'completed'],
    ['stop', 'incomplete'],
  ] as const)('timeout_ms under %s abandons the tool call in flight', async (policy, status) => {
    const user = `Timeout ${policy}`;
    scenarios.set(user, (req, round) =>
      req.tool_choice === 'none'
        ? { content: 'out of time' }
        : round === 0
          ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 3000, label: `t-${policy}` } }] }
          : { content: 'never' },
    );
    const run = await stack.waitForRun(
      (await stack.createRun({ input: user, timeout_ms: 400, on_budget_exhausted: policy })).id,
    );
    expect(run).toMatchObject({ status, stop_reason: 'timeout' });
    const steps = (await stack.getJson(`/v1/runs/${run.id}/steps`)).data;
    expect(steps[0].tool_calls[0].output).toMatch(/deadline/);
    if (policy === 'final_answer') expect(run.output?.content).toBe('out of time');
    else expect(run.output).toBeNull();
  });

  it('timeout_ms abandons a model step in flight at max_depth under stop', async () => {
    const user = 'Slow last step';
    // One round, then (at max_depth 1) a step whose model answers long after the deadline.
    scenarios.set(user, (_req, round) =>
      round === 0
        ? { tool_calls: [{ name: 'crm__count_calls', arguments: {} }] }
        : { content: 'too late', delayMs: 3000 },
    );
    const run = await stack.waitForRun(
      (await stack.createRun({ input: user, max_depth: 1, timeout_ms: 800, on_budget_exhausted: 'stop' })).id,
    );
    expect(run).toMatchObject({ status: 'incomplete', stop_reason: 'timeout', depth: 1 });
    expect(run.output).toBeNull();
  });

  it('timeout_ms abandons a model step in flight', async () => {
    const user = 'Slow model';
    scenarios.set(user, (req) => (req.tool_choice === 'none' ? { content: 'late answer' } : { hang: true }));
    const run = await stack.waitForRun(
      (await stack.createRun({ input: user, timeout_ms: 300, on_budget_exhausted: 'stop' })).id,
    );
    expect(run).toMatchObject({ status: 'incomplete', stop_reason: 'timeout' });
  });
});

describe('private webhook URLs', () => {
  let strict: Stack;
  beforeAll(async () => {
    strict = await startStack({ handler, env: { WEBHOOK_SECRET: 'secret' } });
  });
  afterAll(async () => strict?.close());

  it.each([
    'http://127.0.0.1:9/hook',
    'http://localhost/hook',
    'http://10.1.2.3/x',
    'http://[::1]/x',
    'http://169.254.169.254/latest',
    'http://192.168.1.1/',
  ])('refuses %s with a 400', async (url) => {
    const res = await strict.request('/v1/runs', { method: 'POST', json: { input: 'x', webhook: { url } } });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error.code).toBe('validation_error');
    expect(error.details?.[0].field).toBe('webhook.url');
  });
});

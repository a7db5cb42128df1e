import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { type RunObject } from '@agentq/shared/core';
import { RUN_FIELDS, runKeys, TOOL_CALL_FIELDS } from '@agentq/shared/store';
import type { Handler } from '@agentq/scripted-llm';
import { spawnRedisServer, type SpawnedRedis } from './fixtures/redis.js';
import { monitorRedis } from './fixtures/redis-monitor.js';
import { startStack, type Stack } from './fixtures/services.js';
import { bodyOf } from './fixtures/api-client.js';
import { readSse } from './fixtures/sse.js';
import { waitFor } from './fixtures/wait.js';

// Every input is hostile until bounded: no request makes the API hold, build or send without end.

// A wait ends as soon as what it waits for happens; its limit, inside the test's own, is only how long a busy
// machine may take before the failure names what never happened.
const WAIT_MS = 40_000;

const handler: Handler = () => ({ content: 'ok' });
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    handler,
    env: {
      MAX_BODY_BYTES: String(1 << 20),
      MAX_INPUT_BYTES: String(1 << 20),
      MAX_CONTEXT_BYTES: String(1 << 20),
      MAX_RESPONSES_IN_FLIGHT_BYTES: String(40 << 20),
    },
  });
});
afterAll(async () => stack?.close());

/**
 * POSTs `bytes` of JSON with a plain http client that writes the whole body; resolves with the status or the
 * socket error.
 */
function postRaw(url: string, bytes: number): Promise<number | string> {
  return new Promise((resolve) => {
    const body = Buffer.alloc(bytes, 'a');
    body.write('{"input":"', 0);
    const req = request(
      `${url}/v1/runs`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': bytes } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end(body);
  });
}

/**
 * POSTs `body` in chunks (Transfer-Encoding: chunked, no Content-Length); resolves with the status and the
 * answer's error code.
 */
function postChunked(url: string, body: string): Promise<{ status: number | string; code?: string }> {
  return new Promise((resolve) => {
    const req = request(
      `${url}/v1/runs`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            code: text ? (JSON.parse(text) as { error?: { code: string } }).error?.code : undefined,
          }),
        );
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code ?? err.message }));
    for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.slice(i, i + 64 * 1024));
    req.end();
  });
}

describe('request bodies', () => {
  it('a body far over the limit gets its 413, also twenty at once (the rest of it is drained, not cut off)', async () => {
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => postRaw(stack.api.url, 8 << 20)));
    expect(outcomes).toEqual(Array(20).fill(413));
    // fetch (undici) sends the whole body before it reads the answer.
    const body = `{"input":"${'a'.repeat(8 << 20)}"}`;
    const fetched = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${stack.api.url}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        }).then(
          (r) => r.status,
          (err: Error & { cause?: { code?: string } }) => err.cause?.code ?? err.message,
        ),
      ),
    );
    expect(fetched).toEqual(Array(20).fill(413));
  });

  it('a body sent without a Content-Length is counted as it is read: over the limit a 413, within it a run', async () => {
    // Padded with spaces: a valid run once read, so only the body limit can refuse it.
    const over = await postChunked(stack.api.url, `{"input":"hi"${' '.repeat(2 << 20)}}`);
    expect(over).toEqual({ status: 413, code: 'payload_too_large' });
    const within = await postChunked(stack.api.url, JSON.stringify({ input: 'b'.repeat(200 * 1024) }));
    expect(within.status).toBe(202);
  });

  it('metadata is at most 16 KB: past it a 400 naming the field', async () => {
    const res = await stack.request('/v1/runs', {
      method: 'POST',
      json: { input: 'hi', metadata: { blob: 'x'.repeat(17 * 1024) } },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; details: Array<{ field: string }> } };
    expect(body.error.code).toBe('validation_error');
    expect(body.error.details.map((d) => d.field)).toEqual(['metadata']);
    expect(
      (
        await stack.request('/v1/runs', {
          method: 'POST',
          json: { input: 'hi', metadata: { blob: 'x'.repeat(15 * 1024) } },
        })
      ).status,
    ).toBe(202);
  });

  it('response_format and client_tools are bounded (64 KB, 256 KB as JSON): past it a 400 naming the field', async () => {
    const schema = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string' }])),
    };
    const big = await stack.request('/v1/runs', {
      method: 'POST',
      json: { input: 'hi', response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } },
    });
    expect(big.status).toBe(400);
    expect(
      ((await big.json()) as { error: { details: Array<{ field: string }> } }).error.details.map((d) => d.field),
    ).toEqual(['response_format']);
    const tools = Array.from({ length: 64 }, (_, i) => ({
      type: 'function',
      function: { name: `t${i}`, parameters: { type: 'object', description: 'x'.repeat(5000) } },
    }));
    const many = await stack.request('/v1/runs', { method: 'POST', json: { input: 'hi', client_tools: tools } });
    expect(many.status).toBe(400);
    expect(
      ((await many.json()) as { error: { details: Array<{ field: string }> } }).error.details.map((d) => d.field),
    ).toEqual(['client_tools']);
    const fits = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, { type: 'string' }])),
    };
    expect(
      (
        await stack.request('/v1/runs', {
          method: 'POST',
          json: { input: 'hi', response_format: { type: 'json_schema', json_schema: { name: 'x', schema: fits } } },
        })
      ).status,
    ).toBe(202);
  });

  it('a body of 20,000 unknown fields gets a 400 of a few KB naming the first 50', async () => {
    const body: Record<string, unknown> = { input: 'hi' };
    for (let i = 0; i < 20_000; i++) body[`k${i}`] = 0;
    body['y'.repeat(10_000)] = 0;
    const res = await stack.request('/v1/runs', { method: 'POST', json: body });
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(text.length).toBeLessThan(16 * 1024);
    const details = (JSON.parse(text) as { error: { details: Array<{ field: string; message: string }> } }).error
      .details;
    expect(details).toHaveLength(50);
    expect(details[0]).toEqual({ field: 'k0', message: 'unknown field' });
  });

  it('JSON nested 5,000 deep is a 400, not a 500 (and 64 levels are fine)', async () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const tooDeep = await stack.request('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"input":"hi","metadata":{"a":${deep(5000)}}}`,
    });
    expect(tooDeep.status).toBe(400);
    expect(((await tooDeep.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'invalid_json',
      message: expect.stringContaining('64'),
    });
    const fine = await stack.request('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"input":"hi","metadata":{"a":${deep(62)}}}`,
    });
    expect(fine.status).toBe(202);
  });
});

/** A finished run. */
async function finishedRun(): Promise<string> {
  const res = await stack.request('/v1/runs', { method: 'POST', json: { input: 'large' } });
  const { id } = (await res.json()) as RunObject;
  await stack.waitForRun(id);
  return id;
}

/**
 * A finished run whose transcript (`messages`), steps (`steps`), sub-runs (`children`, 4 of them with large
 * outputs) or output (`output`) the test makes about `mb` MB large, straight in Redis.
 */
async function largeRun(mb: number, what: 'messages' | 'steps' | 'children' | 'output'): Promise<string> {
  const id = await finishedRun();
  const k = runKeys(stack.prefix, id);
  if (what === 'output') {
    await stack.redis.hset(
      k.run,
      RUN_FIELDS.output,
      JSON.stringify({ role: 'assistant', content: 'y'.repeat(mb << 20) }),
    );
    return id;
  }
  if (what === 'children') {
    for (let i = 0; i < 4; i++) {
      const child = await finishedRun();
      await stack.redis.hset(
        runKeys(stack.prefix, child).run,
        RUN_FIELDS.output,
        JSON.stringify({ role: 'assistant', content: 'z'.repeat((mb << 20) / 4) }),
      );
      await stack.redis.zadd(k.children, i, child);
    }
    return id;
  }
  const output = 'x'.repeat(100 * 1024);
  // mb × 10 messages, or steps of one call, of 100 KB each, 40 at a time.
  for (let i = 0; i < mb * 10; i += 40) {
    if (what === 'messages') {
      // Appended as a round's results are, counted in the transcript's stored size.
      const batch = Array.from({ length: 40 }, () =>
        JSON.stringify({ role: 'tool', tool_call_id: 'c', content: output }),
      );
      await stack.redis.rpush(k.messages, ...batch);
      await stack.redis.hincrby(
        k.run,
        RUN_FIELDS.transcriptBytes,
        batch.reduce((n, m) => n + m.length, 0),
      );
    } else {
      for (let d = i + 1; d <= i + 40; d++) {
        const call = { id: `c${d}`, type: 'function', function: { name: 'crm__lookup', arguments: '{}' } };
        await stack.redis.hset(
          k.steps,
          String(d),
          JSON.stringify({
            depth: d,
            status: 'completed',
            model: 'm',
            usage: {},
            message: { role: 'assistant', content: null, tool_calls: [call] },
          }),
        );
        await stack.redis.hset(
          k.toolCalls(d),
          TOOL_CALL_FIELDS.result(0),
          JSON.stringify({ status: 'completed', output, is_error: false, attempts: 1, duration_ms: 1 }),
        );
      }
    }
  }
  return id;
}

/**
 * GETs (or POSTs, with no body) `path` of `on`'s API on a raw connection (with `key`, if given)
 * and resolves at the answer's first bytes with the status, those bytes and the socket; with
 * `stopReading` the rest stays unread.
 */
function rawGet(
  on: Stack,
  path: string,
  opts: { key?: string; stopReading?: boolean; method?: 'GET' | 'POST' } = {},
): Promise<{ status: string; head: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const { port } = new URL(on.api.url);
    const auth = opts.key ? `Authorization: Bearer ${opts.key}\r\n` : '';
    const method = opts.method ?? 'GET';
    const length = method === 'POST' ? 'Content-Length: 0\r\n' : '';
    const socket = connect(Number(port), '127.0.0.1', () =>
      socket.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth}${length}\r\n`),
    );
    socket.once('data', (d: Buffer) => {
      if (opts.stopReading) socket.pause();
      resolve({ status: d.toString('latin1', 9, 12), head: d.toString('latin1'), socket });
    });
    socket.once('error', reject);
  });
}

/** GETs `path` and reads only the answer's first bytes: the rest stays unread. */
const askAndNotRead = (path: string) => rawGet(stack, path, { stopReading: true });

/**
 * Asks for the steps of `steps` and the sub-runs of `tree` six times each, all at once; resolves
 * with each answer (status, items) and how often Redis was asked for each run's steps or sub-runs.
 */
async function sixOfEachAtOnce(steps: string, tree: string) {
  const stepsKey = runKeys(stack.prefix, steps).steps;
  const childrenKey = runKeys(stack.prefix, tree).children;
  const reads: string[] = [];
  const monitor = await monitorRedis(stack.redisUrl, (cmd) => {
    if (cmd.source !== 'lua' && (cmd.args[1] === stepsKey || cmd.args[1] === childrenKey)) reads.push(cmd.args[1]);
  });
  try {
    const answers = await Promise.all(
      [...Array(6).fill(`/v1/runs/${steps}/steps`), ...Array(6).fill(`/v1/runs/${tree}/children`)].map(
        async (path: string) => {
          const res = await stack.request(path);
          return { path, status: res.status, count: ((await res.json()) as { data: unknown[] }).data.length };
        },
      ),
    );
    // Every read the answers made has been reported (MONITOR reports a moment after Redis runs them).
    await monitor.caughtUp();
    return {
      answers,
      stepsReads: reads.filter((k) => k === stepsKey).length,
      childrenReads: reads.filter((k) => k === childrenKey).length,
    };
  } finally {
    monitor.close();
  }
}

describe('answers that grow with a run', () => {
  it('a client that does not read its large answers holds MAX_RESPONSES_IN_FLIGHT_BYTES at most: ' +
    'the next gets 503 until those are sent', async () => {
    const transcript = await largeRun(24, 'messages');
    const steps = await largeRun(24, 'steps');
    const tree = await largeRun(24, 'children');
    const answer = await largeRun(24, 'output');
    const unread = await askAndNotRead(`/v1/runs/${transcript}/messages`);
    expect(unread.status).toBe('200');
    try {
      // 24 MB are held for it (the socket has taken only part of them): 24 more do not fit in 40.
      for (const path of [
        `/v1/runs/${transcript}/messages`,
        `/v1/runs/${steps}/steps`,
        `/v1/runs/${tree}/children`,
        `/v1/runs/${answer}`,
      ]) {
        const busy = await stack.request(path);
        expect(busy.status).toBe(503);
        expect(busy.headers.get('retry-after')).toBe('1');
        expect(((await busy.json()) as { error: { code: string } }).error.code).toBe('server_busy');
      }
      // Small answers still go out.
      expect((await stack.request(`/v1/runs/${transcript}`)).status).toBe(200);
    } finally {
      unread.socket.destroy();
    }
    // Its connection gone, the room is free again; each large answer alone is always sent.
    await waitFor(
      async () => {
        const res = await stack.request(`/v1/runs/${transcript}/messages`);
        const body = (await res.json()) as { data?: unknown[] };
        // Its 2 messages (question, answer) and the 240 added.
        return res.status === 200 && body.data?.length === 242;
      },
      { what: 'the transcript served again', timeoutMs: WAIT_MS },
    );
    const full = (await stack.getJson(`/v1/runs/${steps}/steps`)) as { data: unknown[] };
    expect(full.data.length).toBe(241);
    const children = (await stack.getJson(`/v1/runs/${tree}/children`)) as { data: RunObject[] };
    expect(children.data.map((r) => r.output?.content?.length)).toEqual(Array(4).fill(6 << 20));
    expect(((await stack.getJson(`/v1/runs/${answer}`)) as RunObject).output?.content?.length).toBe(24 << 20);
  }, 60_000);

  it('a cancel that answers with a large run is held as GET of the run is: unread, the next large answer gets 503', async () => {
    const answer = await largeRun(24, 'output');
    const unread = await rawGet(stack, `/v1/runs/${answer}/cancel`, { method: 'POST', stopReading: true });
    expect(unread.status).toBe('202');
    try {
      expect((await stack.request(`/v1/runs/${answer}`)).status).toBe(503);
      expect((await stack.request(`/v1/runs/${answer}/cancel`, { method: 'POST' })).status).toBe(503);
    } finally {
      unread.socket.destroy();
    }
    // Read whole: an answer left unread would hold its room from the tests that follow.
    await waitFor(
      async () => {
        const res = await stack.request(`/v1/runs/${answer}/cancel`, { method: 'POST' });
        const run = (await res.json()) as RunObject;
        return res.status === 202 && run.output?.content?.length === 24 << 20;
      },
      { what: 'the room free again', timeoutMs: WAIT_MS },
    );
  }, 60_000);

  it('the run list: an unread page of runs with large outputs holds its ' +
    'room until it is read; meanwhile the next large answer gets 503', async () => {
    const runs = [await largeRun(12, 'output'), await largeRun(12, 'output')];
    // The two newest runs, in one batch of 24 MB.
    const unread = await askAndNotRead('/v1/runs?limit=2');
    expect(unread.status).toBe('200');
    try {
      await waitFor(async () => (await gauge(stack, 'agentq_response_bytes_in_flight')) >= 24 << 20, {
        what: 'the unread page held',
        timeoutMs: WAIT_MS,
      });
      const next = await stack.request(`/v1/runs/${runs[0]}`);
      await next.arrayBuffer();
      expect(next.status).toBe(503);
    } finally {
      unread.socket.destroy();
    }
    await waitFor(async () => (await gauge(stack, 'agentq_response_bytes_in_flight')) === 0, {
      what: 'the page let go',
      timeoutMs: WAIT_MS,
    });
    const page = await stack.request('/v1/runs?limit=2');
    const listed = (await page.json()) as { data: RunObject[] };
    expect(listed.data.map((r) => r.id)).toEqual([...runs].reverse());
    expect(listed.data[0].output?.content).toHaveLength(12 << 20);
  }, 60_000);

  it('the run list: a page that waits for room has not read its runs yet (a waiting list holds nothing uncounted)', async () => {
    const runs = [await largeRun(12, 'output'), await largeRun(12, 'output')];
    const runKeysRead = new Set(runs.map((id) => runKeys(stack.prefix, id).run));
    let reads = 0;
    const monitor = await monitorRedis(stack.redisUrl, (cmd) => {
      if (cmd.args[0]?.toLowerCase() === 'hgetall' && runKeysRead.has(cmd.args[1])) reads++;
    });
    const unread = await askAndNotRead('/v1/runs?limit=2');
    expect(unread.status).toBe('200');
    let second: Promise<{ status: number; ids: string[]; length?: number }> | undefined;
    try {
      await waitFor(async () => (await gauge(stack, 'agentq_response_bytes_in_flight')) >= 24 << 20, {
        what: 'the unread page held',
        timeoutMs: WAIT_MS,
      });
      // The first page has read its two runs; from here on, only the second page's reads count.
      await waitFor(async () => reads === 2, { what: "the first page's reads", timeoutMs: WAIT_MS });
      reads = 0;
      // The same page again, by the same key: it waits for the first to be read.
      second = stack.request('/v1/runs?limit=2').then(async (res) => {
        const page = (await res.json()) as { data: RunObject[] };
        return { status: res.status, ids: page.data.map((r) => r.id), length: page.data[0]?.output?.content?.length };
      });
      await waitFor(async () => (await gauge(stack, 'agentq_event_streams_waiting_for_room')) >= 1, {
        what: 'the second page waiting for room',
        timeoutMs: WAIT_MS,
      });
      // Sized, not read: its 24 MB are not in memory while it waits (before, it read them first).
      // Any read it made before it waited has been reported once the monitor has caught up.
      await monitor.caughtUp();
      expect(reads).toBe(0);
    } finally {
      unread.socket.destroy();
      monitor.close();
    }
    // The first gone, the second reads its page and answers it whole.
    expect(await second).toEqual({ status: 200, ids: [...runs].reverse(), length: 12 << 20 });
  }, 60_000);

  it("an ended run's steps and sub-runs asked for by many at once are read and built once for all of them", async () => {
    const steps = await largeRun(1, 'steps'); // 40 steps of 100 KB, and its own
    const tree = await largeRun(1, 'children');
    // Six of each at once (30 MB in all, within MAX_RESPONSES_IN_FLIGHT_BYTES).
    const { answers, stepsReads, childrenReads } = await sixOfEachAtOnce(steps, tree);
    expect(answers.filter((a) => a.status === 200 && a.count === (a.path.endsWith('/steps') ? 41 : 4))).toHaveLength(
      12,
    );
    // Without sharing, six reads of each; the requests overlap, so one or two.
    expect(stepsReads).toBeLessThanOrEqual(2);
    expect(childrenReads).toBeLessThanOrEqual(2);
  }, 60_000);
});

describe('a run still going: its steps and sub-runs', () => {
  it('asked for by many at once are built at most twice, and a request sees what was written before it', async () => {
    const steps = await largeRun(1, 'steps');
    const tree = await largeRun(1, 'children');
    for (const id of [steps, tree]) await stack.redis.hset(runKeys(stack.prefix, id).run, RUN_FIELDS.status, 'running');
    const { answers, stepsReads, childrenReads } = await sixOfEachAtOnce(steps, tree);
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    expect(answers.map((a) => a.count)).toEqual([...Array(6).fill(41), ...Array(6).fill(4)]);
    // Built for each request, six reads of each; shared, the one under way and the next.
    expect(stepsReads).toBeLessThanOrEqual(2);
    expect(childrenReads).toBeLessThanOrEqual(2);
    // A step stored, then asked for: the answer has it.
    const call = { id: 'c_new', type: 'function', function: { name: 'crm__lookup', arguments: '{}' } };
    await stack.redis.hset(
      runKeys(stack.prefix, steps).steps,
      '42',
      JSON.stringify({
        depth: 42,
        status: 'completed',
        model: 'm',
        usage: {},
        message: { role: 'assistant', content: null, tool_calls: [call] },
      }),
    );
    const after = (await stack.getJson(`/v1/runs/${steps}/steps`)) as { data: unknown[] };
    expect(after.data).toHaveLength(42);
  }, 60_000);
});

/**
 * A gauge of the API's /metrics (NaN when it is not there), on a connection of its own: a pooled one
 * could be picked just as a stack with a short CLIENT_IDLE_TIMEOUT_MS closes it for being idle.
 */
async function gauge(on: Stack, name: string): Promise<number> {
  const text = await (await fetch(`${on.api.url}/metrics`, { headers: { connection: 'close' } })).text();
  const m = new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

/**
 * A finished run (of `on`'s stack, made with `key`) whose event stream has, after its first event,
 * a `step.completed` of `mb` MB (as a model's long answer would), straight in Redis.
 */
async function largeEventRun(mb: number, on: Stack = stack, key?: string): Promise<string> {
  const { id } = await on.createRun({ input: 'large event' }, key);
  await on.waitForRun(id, { key });
  const events = runKeys(on.prefix, id).events;
  const [first, ...rest] = await on.redis.xrange(events, '-', '+');
  await on.redis.del(events);
  await on.redis.xadd(events, '*', ...first[1]);
  const data = {
    run_id: id,
    depth: 0,
    finish_reason: 'stop',
    content: 'y'.repeat(mb << 20),
    tool_calls: [],
    at: new Date().toISOString(),
  };
  await on.redis.xadd(events, '*', 'type', 'step.completed', 'data', JSON.stringify(data));
  for (const [, fields] of rest) await on.redis.xadd(events, '*', ...fields);
  return id;
}

describe('an SSE stream', () => {
  it('holds its large events within MAX_RESPONSES_IN_FLIGHT_BYTES: ' +
    'while its client does not read, large answers get 503 and other streams wait, then go on', async () => {
    const run = await largeEventRun(24);
    const answer = await largeRun(24, 'output');
    const unread = await askAndNotRead(`/v1/runs/${run}/events`);
    expect(unread.status).toBe('200');
    const seen: string[] = [];
    let second: Promise<Awaited<ReturnType<typeof readSse>>> | undefined;
    try {
      // Its 24 MB event is held (the socket has taken only part of it): 24 more do not fit in 40.
      await waitFor(
        async () => {
          const res = await stack.request(`/v1/runs/${answer}`);
          await res.arrayBuffer(); // read: an answer not read is held itself
          return res.status === 503;
        },
        { what: 'a large answer refused beside the unread stream', timeoutMs: WAIT_MS },
      );
      // A stream, whose status line is sent, waits for room instead: its small events go out.
      second = stack.request(`/v1/runs/${run}/events`).then((res) =>
        readSse(res, {
          stopAfter: (e) => {
            seen.push(e.event);
            return false;
          },
        }),
      );
      second.catch(() => {}); // awaited below; ended with the stack if an assertion fails first
      // Waiting, and its first event (sent before it waited) read on this side.
      await waitFor(
        async () => seen.length > 0 && (await gauge(stack, 'agentq_event_streams_waiting_for_room')) === 1,
        { what: 'the second stream waiting for room', timeoutMs: WAIT_MS },
      );
      expect(seen).toEqual(['run.queued']);
    } finally {
      unread.socket.destroy();
    }
    // The unread stream gone, its room is free: the waiting stream gets every event, in order.
    const events = await second!;
    expect(events.map((e) => e.event).slice(0, 2)).toEqual(['run.queued', 'step.completed']);
    expect((events[1].data as { content: string }).content).toHaveLength(24 << 20);
    expect(events.at(-1)?.event).toBe('run.completed');
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect((await stack.request(`/v1/runs/${answer}`)).status).toBe(200);
  }, 60_000);
});

describe("a run's live large event", () => {
  let live: Stack;
  beforeAll(async () => {
    // The model never answers: the run stays running, its streams open, its events live.
    live = await startStack({
      handler: () => ({ hang: true }),
      env: { MAX_RESPONSES_IN_FLIGHT_BYTES: String(64 << 20) },
    });
  });
  afterAll(async () => live?.close());

  it('is one buffer for all its subscribers, held once: a stalled one does not hold up the others', async () => {
    const run = (await live.createRun({ input: 'live' })).id;
    const stalled = (await rawGet(live, `/v1/runs/${run}/events`, { stopReading: true })).socket;
    const seen: Array<{ event: string; length: number }> = [];
    const reader = live.request(`/v1/runs/${run}/events`).then((res) =>
      readSse(res, {
        stopAfter: (e) => {
          seen.push({ event: e.event, length: JSON.stringify(e.data).length });
          return e.event === 'step.completed';
        },
      }),
    );
    reader.catch(() => {});
    try {
      await waitFor(async () => (await gauge(live, 'agentq_event_streams_open')) === 2 && seen.length > 0, {
        what: 'both streams following the run',
        timeoutMs: WAIT_MS,
      });
      // A model's 40 MB answer arrives: each subscriber's share counted, 80 MB would not fit in 64.
      const data = {
        run_id: run,
        depth: 0,
        finish_reason: 'stop',
        content: 'z'.repeat(40 << 20),
        tool_calls: [],
        at: new Date().toISOString(),
      };
      await live.redis.xadd(
        runKeys(live.prefix, run).events,
        '*',
        'type',
        'step.completed',
        'data',
        JSON.stringify(data),
      );
      // Counted for each subscriber, the reading one would wait for the stalled one's room.
      await waitFor(() => seen.at(-1)?.event === 'step.completed', {
        what: 'the reading stream to get the answer',
        timeoutMs: WAIT_MS,
      });
      await reader;
      expect(seen.at(-1)!.length).toBeGreaterThan(40 << 20);
      // The stalled stream still holds it, once.
      const held = await gauge(live, 'agentq_response_bytes_in_flight');
      expect(held).toBeGreaterThan(40 << 20);
      expect(held).toBeLessThan(41 << 20);
    } finally {
      stalled.destroy();
      await live.request(`/v1/runs/${run}/cancel`, { method: 'POST' });
    }
    await waitFor(async () => (await gauge(live, 'agentq_response_bytes_in_flight')) === 0, {
      what: 'the room given back',
      timeoutMs: WAIT_MS,
    });
  }, 60_000);
});

describe('a connection that makes no progress', () => {
  let idle: Stack;
  beforeAll(async () => {
    // The model never answers: a run stays running and its stream open.
    idle = await startStack({
      handler: () => ({ hang: true }),
      env: { CLIENT_IDLE_TIMEOUT_MS: '1500', MAX_RESPONSES_IN_FLIGHT_BYTES: String(40 << 20) },
    });
  });
  afterAll(async () => idle?.close());

  it('is closed after CLIENT_IDLE_TIMEOUT_MS, and what its answer held is free again; ' +
    'a stream that has nothing to send stays open on its keep-alives', async () => {
    // Every request of this test to this API on a connection of its own: it closes idle ones after 1.5 s.
    const close = { connection: 'close' };
    const created = await idle.request('/v1/runs', { method: 'POST', json: { input: 'idle' }, headers: close });
    const run = (await bodyOf<RunObject>(created)).id;
    await idle.redis.hset(
      runKeys(idle.prefix, run).run,
      RUN_FIELDS.output,
      JSON.stringify({ role: 'assistant', content: 'y'.repeat(24 << 20) }),
    );
    const { port } = new URL(idle.api.url);
    const raw = (path: string) =>
      connect(Number(port), '127.0.0.1', function (this: Socket) {
        this.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      });
    // A client that asks for the 24 MB run and stops reading (paused, it does not see the close).
    const askedAt = Date.now();
    const stalled = raw(`/v1/runs/${run}`);
    stalled.once('data', () => stalled.pause());
    // A client that follows the run's events, which has nothing to send.
    const follower = raw(`/v1/runs/${run}/events`);
    const followedAt = Date.now();
    const comments: string[] = [];
    let followerClosed = false;
    follower.on('data', (d: Buffer) => comments.push(...(d.toString().match(/: keep-alive/g) ?? [])));
    follower.on('close', () => (followerClosed = true));
    try {
      await waitFor(async () => (await gauge(idle, 'agentq_response_bytes_in_flight')) > 0, {
        what: 'the stalled answer held',
        timeoutMs: WAIT_MS,
      });
      // The API closes the connection once it has taken nothing for 1.5 s, and the room is free.
      await waitFor(async () => (await gauge(idle, 'agentq_response_bytes_in_flight')) === 0, {
        what: 'the stalled connection closed, its room given back',
        timeoutMs: WAIT_MS,
      });
      expect(Date.now() - askedAt).toBeGreaterThanOrEqual(1_000);
      // The follower is still there three timeouts on, kept alive every 0.5 s: ten keep-alives take
      // at least 5 s, and a stream closed as idle would never get them.
      await waitFor(() => followerClosed || comments.length >= 10, { what: 'ten keep-alives', timeoutMs: WAIT_MS });
      expect(followerClosed).toBe(false);
      expect(Date.now() - followedAt).toBeGreaterThanOrEqual(3 * 1500);
    } finally {
      stalled.destroy();
      follower.destroy();
      await idle.request(`/v1/runs/${run}/cancel`, { method: 'POST', headers: close });
    }
  }, 60_000);
});

describe('two keys', () => {
  const KEY_A = 'key-a-bodies';
  const KEY_B = 'key-b-bodies';
  let two: Stack;
  beforeAll(async () => {
    two = await startStack({
      handler: () => ({ content: 'ok' }),
      apiKey: `${KEY_A},${KEY_B}`,
      env: {
        MAX_BODY_BYTES: String(3 << 20),
        MAX_BODIES_IN_FLIGHT_BYTES: String(4 << 20),
        MAX_RESPONSES_IN_FLIGHT_BYTES: String(40 << 20),
      },
    });
  });
  afterAll(async () => two?.close());

  /** A POST /v1/runs that declares `bytes` and sends one (its body held open), or all of them (`whole`). */
  function slowPost(key: string, bytes: number, whole = false): Promise<{ socket: Socket; answer: Promise<string> }> {
    return new Promise((resolve, reject) => {
      const { port } = new URL(two.api.url);
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n{`,
        );
        if (whole) socket.write(' '.repeat(bytes - 1));
        const answer = new Promise<string>((r) => socket.once('data', (d: Buffer) => r(d.toString('latin1', 9, 12))));
        resolve({ socket, answer });
      });
      socket.once('error', reject);
    });
  }

  it('one key sending large bodies slowly holds at most half of MAX_BODIES_IN_FLIGHT_BYTES ' +
    "(or one largest body): another tenant's requests still get in", async () => {
    const first = await slowPost(KEY_A, 3 << 20);
    try {
      await waitFor(async () => (await gauge(two, 'agentq_request_body_bytes_in_flight')) === 3 << 20, {
        what: 'the first body held',
        timeoutMs: WAIT_MS,
      });
      // The key's second body would pass its share (3 MB: one largest body, more than half of 4).
      const second = await slowPost(KEY_A, 1 << 20, true);
      expect(await second.answer).toBe('503');
      second.socket.destroy();
      // Another key's run still gets in beside it.
      const res = await two.request('/v1/runs', { method: 'POST', json: { input: 'b' }, key: KEY_B });
      expect(res.status).toBe(202);
    } finally {
      first.socket.destroy();
    }
  }, 60_000);

  it('one key that does not read its large answers holds at most half of ' +
    "MAX_RESPONSES_IN_FLIGHT_BYTES: another tenant's large answers still go out", async () => {
    // Runs of 12 MB outputs, one of each key (written straight in Redis, as a long answer would be).
    const bigRun = async (key: string) => {
      const { id } = await two.createRun({ input: 'big' }, key);
      await two.waitForRun(id, { key });
      await two.redis.hset(
        runKeys(two.prefix, id).run,
        RUN_FIELDS.output,
        JSON.stringify({ role: 'assistant', content: 'y'.repeat(12 << 20) }),
      );
      return id;
    };
    const [a, b] = [await bigRun(KEY_A), await bigRun(KEY_B)];
    const unread = [await rawGet(two, `/v1/runs/${a}`, { key: KEY_A, stopReading: true })];
    expect(unread[0].status).toBe('200');
    try {
      // Its next two, unread too, would hold 36 MB of the 40: each is refused (24 MB of its 20).
      for (let i = 0; i < 2; i++) {
        unread.push(await rawGet(two, `/v1/runs/${a}`, { key: KEY_A, stopReading: true }));
        expect(unread.at(-1)!.status).toBe('503');
        expect(unread.at(-1)!.head).toContain("this tenant's other answers");
      }
      // Another key's large answer goes out beside them.
      const other = await two.request(`/v1/runs/${b}`, { key: KEY_B });
      expect(other.status).toBe(200);
      expect(((await other.json()) as RunObject).output?.content?.length).toBe(12 << 20);
    } finally {
      for (const u of unread) u.socket.destroy();
    }
  }, 60_000);
});

describe('two keys: event streams', () => {
  const KEY_A = 'key-a-streams';
  const KEY_B = 'key-b-streams';
  let two: Stack;
  beforeAll(async () => {
    two = await startStack({
      handler: () => ({ content: 'ok' }),
      apiKey: `${KEY_A},${KEY_B}`,
      env: { MAX_RESPONSES_IN_FLIGHT_BYTES: String(40 << 20) },
    });
  });
  afterAll(async () => two?.close());

  it('one key that opens streams of large events and reads none holds at most half of ' +
    "MAX_RESPONSES_IN_FLIGHT_BYTES: another tenant's stream still gets its large event", async () => {
    const [a, b] = [await largeEventRun(6, two, KEY_A), await largeEventRun(6, two, KEY_B)];
    // Each 6 MB event is read alone, with room for it and its frame (12 MB). Four unread streams
    // of key A would hold 36 MB of the 40 and queue a fourth: key A's share (20 MB) lets one in.
    const unread: Socket[] = [];
    try {
      for (let i = 0; i < 4; i++)
        unread.push((await rawGet(two, `/v1/runs/${a}/events`, { key: KEY_A, stopReading: true })).socket);
      await waitFor(async () => (await gauge(two, 'agentq_event_streams_waiting_for_room')) === 3, {
        what: "key A's streams past its share to wait",
        timeoutMs: WAIT_MS,
      });
      const events = await readSse(await two.request(`/v1/runs/${b}/events`, { key: KEY_B }));
      expect((events[1].data as { content: string }).content).toHaveLength(6 << 20);
      expect(events.at(-1)?.event).toBe('run.completed');
    } finally {
      for (const s of unread) s.destroy();
    }
  }, 60_000);
});

describe('event streams held open', () => {
  const KEY_A = 'key-a-streams';
  const KEY_B = 'key-b-streams';
  let held: Stack;
  beforeAll(async () => {
    // The model never answers: the runs stay running and their streams open.
    held = await startStack({
      handler: () => ({ hang: true }),
      apiKey: `${KEY_A},${KEY_B}`,
      env: { MAX_EVENT_STREAMS: '5', MAX_EVENT_STREAMS_PER_KEY: '3' },
    });
  });
  afterAll(async () => held?.close());

  const openStream = (runId: string, key: string) => rawGet(held, `/v1/runs/${runId}/events`, { key });
  /** Opens `n` streams of a run, each answered 200. */
  async function openAll(n: number, runId: string, key: string, sockets: Socket[]): Promise<void> {
    for (let i = 0; i < n; i++) {
      const s = await openStream(runId, key);
      sockets.push(s.socket);
      expect(s.status).toBe('200');
    }
  }

  it('are at most MAX_EVENT_STREAMS_PER_KEY a key (429) ' +
    'and MAX_EVENT_STREAMS in all (503); a slot is free again once its stream ends', async () => {
    const runA = (await held.createRun({ input: 'a' }, KEY_A)).id;
    const runB = (await held.createRun({ input: 'b' }, KEY_B)).id;
    const sockets: Socket[] = [];
    try {
      await openAll(3, runA, KEY_A, sockets);
      const overKey = await openStream(runA, KEY_A);
      sockets.push(overKey.socket);
      expect(overKey.status).toBe('429');
      expect(overKey.head).toContain('"rate_limited"');
      expect(overKey.head).toContain('MAX_EVENT_STREAMS_PER_KEY');
      // The other key is not held up by the first one's streams, up to the process's limit.
      await openAll(2, runB, KEY_B, sockets);
      const overAll = await openStream(runB, KEY_B);
      sockets.push(overAll.socket);
      expect(overAll.status).toBe('503');
      expect(overAll.head).toContain('"server_busy"');
      expect(overAll.head.toLowerCase()).toContain('retry-after: 1');
      // One of A's streams closed by its client: its slot is free again.
      sockets[0].destroy();
      await waitFor(
        async () => {
          const again = await openStream(runA, KEY_A);
          sockets.push(again.socket);
          return again.status === '200';
        },
        { what: "a stream of A's again", timeoutMs: WAIT_MS },
      );
    } finally {
      for (const s of sockets) s.destroy();
      // Their model calls never answer: cancelled, the workers can stop.
      await held.request(`/v1/runs/${runA}/cancel`, { method: 'POST', key: KEY_A });
      await held.request(`/v1/runs/${runB}/cancel`, { method: 'POST', key: KEY_B });
    }
  }, 60_000);
});

describe('a Redis out of memory', () => {
  let redis: SpawnedRedis;
  let oom: Stack;
  beforeAll(async () => {
    redis = await spawnRedisServer();
    oom = await startStack({ handler, redisUrl: redis.url });
  });
  afterAll(async () => {
    await oom?.close();
    await redis?.stop();
  });

  it('is a 503 with Retry-After, not a 500', async () => {
    const admin = new Redis(redis.url);
    try {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '1');
      const res = await oom.request('/v1/runs', { method: 'POST', json: { input: 'no room' } });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).not.toBeNull();
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
    } finally {
      await admin.config('SET', 'maxmemory', '0');
      admin.disconnect();
    }
  });
});

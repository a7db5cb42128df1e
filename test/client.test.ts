import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createTcpServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AgentqApiError,
  AgentqClient,
  AgentqTimeoutError,
  verifyWebhook,
  WebhookVerificationError,
  type Run,
  type RunEvent,
} from '@agentq/client';
import type { RunObject } from '@agentq/shared/core';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { buildCliIfStale, startCli, type CliOptions } from './fixtures/cli.js';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';
import { readSse } from './fixtures/sse.js';

// The client's own wire types describe what the service builds (checked by tsc).
const fits: (r: RunObject) => Run = (r) => r;
void fits;

const firstUser = (req: ChatRequest) => (req.messages.find((m) => m.role === 'user')?.content as string) ?? '';
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const scenarios: Array<[string, (req: ChatRequest) => Reply]> = [
  [
    'Look up Alice',
    (req) =>
      round(req) === 0
        ? {
            tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'Alice' } }],
            usage: { prompt_tokens: 50, completion_tokens: 5 },
          }
        : { content: 'Alice Jones works at Globex.', usage: { prompt_tokens: 60, completion_tokens: 7 } },
  ],
  [
    'Slow',
    (req) =>
      round(req) < 2
        ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 300, label: `slow-${round(req)}` } }] }
        : { content: 'slow and steady' },
  ],
  ['Hang', () => ({ tool_calls: [{ name: 'crm__sleep', arguments: { ms: 10_000, label: 'hang' } }] })],
  ['Loop', () => ({ tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'Bob' } }] })],
  ['Break', () => ({ error: { status: 400, message: 'this request is not valid for the model' } })],
  [
    'Delegate',
    (req) =>
      round(req) === 0
        ? { tool_calls: [{ name: 'agent_query', arguments: { prompt: 'Child: say hi' } }] }
        : { content: 'the child said hi' },
  ],
  ['Child', () => ({ content: 'hi' })],
];
const handler: Handler = (req) =>
  scenarios.find(([p]) => firstUser(req).startsWith(p))?.[1](req) ?? { content: `answer to ${firstUser(req)}` };

const KEY = 'client-test-key';
const SECRET = 'whsec_' + Buffer.from('client-test-secret-0123456789').toString('base64');

let stack: Stack;
let client: AgentqClient;
let hooks: Server;
let hookUrl: string;
const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];

/**
 * A TCP proxy in front of the API whose connections the test can cut; it listens on `listenPort` (default:
 * any free one).
 */
async function startProxy(port: number, listenPort = 0) {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createTcpServer((downstream) => {
    connections++;
    const upstream = connect(port, '127.0.0.1');
    for (const s of [downstream, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        sockets.delete(s);
        downstream.destroy();
        upstream.destroy();
      });
    }
    downstream.pipe(upstream).pipe(downstream);
  });
  await new Promise<void>((r) => server.listen(listenPort, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get connections() {
      return connections;
    },
    dropAll: () => {
      for (const s of sockets) s.destroy();
    },
    close() {
      for (const s of sockets) s.destroy(); // idle keep-alive connections would hold close() open
      return new Promise((r) => server.close(r));
    },
  };
}

/** A loopback port that nothing listens on (until someone opens it again). */
async function closedPort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

/** The CLI against the stack, to its end; `onStderr` sees all of stderr so far after each chunk. */
function cli(
  args: string[],
  o: Omit<CliOptions, 'url'> & { onStderr?: (all: string, kill: (sig: NodeJS.Signals) => void) => void } = {},
) {
  const p = startCli(args, { url: stack.api.url, apiKey: KEY, stdin: '', ...o });
  if (o.onStderr) p.child.stderr.on('data', () => o.onStderr!(p.stderr, (sig) => p.child.kill(sig)));
  return p.exited;
}

beforeAll(async () => {
  // The CLI runs from its build: rebuild it when a source is newer than the build.
  await buildCliIfStale();

  hooks = createHttpServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;
  stack = await startStack({ handler, apiKey: KEY, env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_SECRET: SECRET } });
  client = new AgentqClient({ baseUrl: stack.api.url, apiKey: KEY });
});
afterAll(async () => {
  await stack?.close();
  if (hooks) await new Promise((r) => hooks.close(r));
});

describe('AgentqClient', () => {
  it('creates a run, waits for it, reads its transcript, steps and children', async () => {
    const created = await client.createRun({ input: 'Look up Alice', metadata: { from: 'client' } });
    expect(created).toMatchObject({ object: 'run', status: 'queued', metadata: { from: 'client' } });
    const run = await client.waitForRun(created.id, { timeoutMs: 20_000 });
    expect(run).toMatchObject({
      id: created.id,
      status: 'completed',
      stop_reason: 'stop',
      depth: 1,
      output: { content: 'Alice Jones works at Globex.' },
    });
    expect(run.usage).toMatchObject({ prompt_tokens: 110, completion_tokens: 12, model_calls: 2, tool_calls: 1 });
    expect((await client.getMessages(run.id)).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    const [step] = await client.getSteps(run.id);
    expect(step.tool_calls[0]).toMatchObject({ name: 'crm__search_contacts', status: 'completed', is_error: false });
    expect(await client.getChildren(run.id)).toEqual([]);
    expect((await client.listTools()).map((t) => t.name)).toContain('crm__search_contacts');
  });

  it('makes retries safe with an idempotency key', async () => {
    const key = `idem-${Date.now()}`;
    const a = await client.createRun({ input: 'Once' }, { idempotencyKey: key });
    const b = await client.createRun({ input: 'Once' }, { idempotencyKey: key });
    expect(b.id).toBe(a.id);
    const err = await client.createRun({ input: 'Twice' }, { idempotencyKey: key }).catch((e) => e);
    expect(err).toBeInstanceOf(AgentqApiError);
    expect(err).toMatchObject({ status: 409 });
  });

  it('throws AgentqApiError with status, code, message and details', async () => {
    const missing = await client.getRun('run_000000000000000000000').catch((e) => e);
    expect(missing).toBeInstanceOf(AgentqApiError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    const invalid = await client.createRun({ input: 'x', max_depth: 0 }).catch((e) => e);
    expect(invalid).toMatchObject({ status: 400, code: 'validation_error' });
    expect(invalid.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'max_depth' })]));
    const stranger = await new AgentqClient({ baseUrl: stack.api.url, apiKey: 'not-a-valid-key' })
      .listRuns()
      .catch((e) => e);
    expect(stranger).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(stranger.message).toMatch(/API key/);
  });

  it('lists runs page by page, and iterates over every page', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await client.createRun({ input: `List me ${i}` })).id);
    for (const id of ids) await client.waitForRun(id);
    const page = await client.listRuns({ limit: 2 });
    expect(page.data.map((r) => r.id)).toEqual([ids[4], ids[3]]);
    expect(page.next).toBe(ids[3]);
    expect((await client.listRuns({ limit: 2, after: page.next! })).data.map((r) => r.id)).toEqual([ids[2], ids[1]]);
    const all: string[] = [];
    for await (const r of client.listAllRuns({ limit: 2 })) all.push(r.id);
    expect(all.slice(0, 5)).toEqual([...ids].reverse());
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe((await client.listRuns({ limit: 100 })).data.length);
    for await (const r of client.listAllRuns({ status: 'completed', limit: 3 })) expect(r.status).toBe('completed');
  });

  it('cancels a run', async () => {
    const run = await client.createRun({ input: 'Hang on' });
    await waitFor(() => stack.crm.calls.some((c) => c.args.label === 'hang'), { what: 'the tool call to be running' });
    const cancelled = await client.cancelRun(run.id);
    expect(cancelled).toMatchObject({ id: run.id, status: 'cancelled', stop_reason: 'cancelled' });
    expect((await client.waitForRun(run.id)).status).toBe('cancelled');
  });

  it('waits with growing pauses, gives up at the deadline, and stops on abort', async () => {
    const polls: number[] = [];
    const counting = new AgentqClient({
      baseUrl: stack.api.url,
      apiKey: KEY,
      fetch: (input, init) => {
        if (String(input).match(/\/v1\/runs\/run_\w+$/)) polls.push(Date.now());
        return fetch(input, init);
      },
    });
    const slow = await counting.createRun({ input: 'Slow but sure' });
    const run = await counting.waitForRun(slow.id, { pollIntervalMs: 20, maxPollIntervalMs: 150 });
    expect(run.status).toBe('completed');
    const gaps = polls.slice(1).map((t, i) => t - polls[i]);
    expect(gaps.length).toBeGreaterThan(3);
    // Backoff, not a fixed rate: the pauses grow from 20 ms towards the 150 ms cap.
    expect(Math.max(...gaps)).toBeGreaterThanOrEqual(140);
    expect(gaps[0]).toBeLessThan(Math.max(...gaps) / 2);
    expect(Math.max(...gaps)).toBeLessThan(1000);

    const hung = await client.createRun({ input: 'Hang again' });
    const timeout = await client.waitForRun(hung.id, { timeoutMs: 150 }).catch((e) => e);
    expect(timeout).toBeInstanceOf(AgentqTimeoutError);
    expect(timeout.run).toMatchObject({ id: hung.id });
    const aborted = await client.waitForRun(hung.id, { signal: AbortSignal.timeout(100) }).catch((e) => e);
    expect(aborted.name).toBe('TimeoutError');
    await client.cancelRun(hung.id);
  });
});

describe('waitForReady', () => {
  it('returns the tools once the API is ready and offers the ones asked for', async () => {
    const tools = await client.waitForReady({ tools: ['crm__search_contacts', 'crm__sleep'] });
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['crm__search_contacts', 'crm__sleep']));
  });

  it('rides out refused connections until the API comes up', async () => {
    // A port nothing listens on yet; the proxy to the API opens it 400 ms later.
    const port = await closedPort();
    const late = new AgentqClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY });
    const t0 = Date.now();
    const opening = new Promise<Awaited<ReturnType<typeof startProxy>>>((resolve) =>
      setTimeout(() => resolve(startProxy(Number(new URL(stack.api.url).port), port)), 400),
    );
    try {
      const tools = await late.waitForReady({ tools: ['crm__search_contacts'], timeoutMs: 10_000, pollIntervalMs: 20 });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
      expect(tools.map((t) => t.name)).toContain('crm__search_contacts');
    } finally {
      await (await opening).close();
    }
  });

  it('gives up at the deadline saying why, and fails at once on a refused key', async () => {
    const missing = await client
      .waitForReady({ tools: ['crm__search_contacts', 'nowhere__tool'], timeoutMs: 300 })
      .catch((e) => e);
    expect(missing).toBeInstanceOf(AgentqTimeoutError);
    expect(missing.message).toMatch(/is not ready after 300 ms: tools not offered yet: nowhere__tool$/);
    const nobody = `http://127.0.0.1:${await closedPort()}`;
    const down = await new AgentqClient({ baseUrl: nobody }).waitForReady({ timeoutMs: 300 }).catch((e) => e);
    expect(down).toBeInstanceOf(AgentqTimeoutError);
    expect(down.message).toBe(`${nobody} is not ready after 300 ms: fetch failed (ECONNREFUSED)`);
    const t0 = Date.now();
    const stranger = await new AgentqClient({ baseUrl: stack.api.url, apiKey: 'not-a-valid-key' })
      .waitForReady({ timeoutMs: 5000 })
      .catch((e) => e);
    expect(stranger).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(Date.now() - t0).toBeLessThan(1000);
  });
});

describe('streamEvents', () => {
  const full = async (id: string) => readSse(await stack.request(`/v1/runs/${id}/events`));

  it('yields every event once, in order, and ends after the terminal event', async () => {
    const run = await client.createRun({ input: 'Look up Alice again' });
    const events: RunEvent[] = [];
    for await (const e of client.streamEvents(run.id)) events.push(e);
    expect(events[0].event).toBe('run.queued');
    expect(events.at(-1)).toMatchObject({ event: 'run.completed', data: { run: { id: run.id, status: 'completed' } } });
    expect(events.map((e) => e.id)).toEqual((await full(run.id)).map((e) => e.id));
  });

  it('resumes by itself with Last-Event-ID when the connection drops mid-stream', async () => {
    const proxy = await startProxy(Number(new URL(stack.api.url).port));
    try {
      const viaProxy = new AgentqClient({ baseUrl: proxy.url, apiKey: KEY });
      const run = await viaProxy.createRun({ input: 'Slow stream' });
      const reconnects: Array<string | undefined> = [];
      const events: RunEvent[] = [];
      let dropped = 0;
      for await (const e of viaProxy.streamEvents(run.id, {
        retryDelayMs: 20,
        onReconnect: (i) => reconnects.push(i.lastEventId),
      })) {
        events.push(e);
        // Cut every connection while the run is still going, twice.
        if (e.event === 'tool.started' && dropped < 2) {
          dropped++;
          proxy.dropAll();
        }
      }
      expect(dropped).toBe(2);
      expect(reconnects.length).toBeGreaterThanOrEqual(2);
      expect(proxy.connections).toBeGreaterThanOrEqual(4); // create + 3 stream connections
      expect(events.at(-1)!.event).toBe('run.completed');
      // No duplicates, no gaps: exactly the stream a single connection gets.
      expect(events.map((e) => e.id)).toEqual((await full(run.id)).map((e) => e.id));
      expect(reconnects[0]).toBe(events.find((e) => e.event === 'tool.started')!.id);
    } finally {
      await proxy.close();
    }
  });

  it('resumes from a given event id after the consumer stopped, and stops on abort', async () => {
    const run = await client.createRun({ input: 'Slow resume' });
    const first: RunEvent[] = [];
    for await (const e of client.streamEvents(run.id)) {
      first.push(e);
      if (e.event === 'step.completed') break; // closes the connection
    }
    const rest: RunEvent[] = [];
    for await (const e of client.streamEvents(run.id, { lastEventId: first.at(-1)!.id })) rest.push(e);
    expect([...first, ...rest].map((e) => e.id)).toEqual((await full(run.id)).map((e) => e.id));

    const hung = await client.createRun({ input: 'Hang a third time' });
    const ctrl = new AbortController();
    const seen: string[] = [];
    const err = await (async () => {
      for await (const e of client.streamEvents(hung.id, { signal: ctrl.signal })) {
        seen.push(e.event);
        if (e.event === 'tool.started') ctrl.abort();
      }
    })().catch((e) => e);
    expect(err.name).toBe('AbortError');
    expect(seen.at(-1)).toBe('tool.started');
    await client.cancelRun(hung.id);
  });

  it("carries each call's output on tool.completed (as /steps has it) and when each event happened", async () => {
    const run = await client.createRun({ input: 'Look up Alice with outputs' });
    const events: RunEvent[] = [];
    for await (const e of client.streamEvents(run.id)) events.push(e);
    const done = events.filter((e) => e.event === 'tool.completed');
    expect(done).toHaveLength(1);
    const [step] = await client.getSteps(run.id);
    expect(step.tool_calls[0].output).toContain('Alice Jones');
    expect(done[0].data).toMatchObject({
      name: 'crm__search_contacts',
      output: step.tool_calls[0].output,
      outcome: 'ok',
    });
    expect(done[0].data.truncated).toBeUndefined();
    // Every event names its run and its time.
    for (const e of events) expect(e.data.run_id).toBe(run.id);
    expect(events.every((e) => Number.isFinite(Date.parse(e.data.at)))).toBe(true);
  });

  it('throws AgentqApiError for a run that does not exist', async () => {
    const err = await (async () => {
      for await (const _ of client.streamEvents('run_000000000000000000000')) break;
    })().catch((e) => e);
    expect(err).toMatchObject({ status: 404, code: 'not_found' });
  });
});

describe('verifyWebhook', () => {
  const delivered = (runId: string) =>
    waitFor(() => received.find((r) => JSON.parse(r.body).data.id === runId), { what: `the webhook of ${runId}` });

  it('accepts what the service signs, with a whsec_ secret and with a raw one', async () => {
    const a = await client.createRun({ input: 'Hook me', webhook: { url: hookUrl } });
    const hook = await delivered(a.id);
    const payload = await verifyWebhook({
      secret: SECRET,
      headers: hook.headers as Record<string, string>,
      body: hook.body,
    });
    expect(payload).toMatchObject({ type: 'run.completed', data: { id: a.id, status: 'completed' } });
    // Headers as a Headers object and the body as bytes work the same.
    const headers = new Headers(Object.entries(hook.headers).map(([k, v]) => [k, String(v)]));
    await expect(
      verifyWebhook({ secret: SECRET, headers, body: new TextEncoder().encode(hook.body) }),
    ).resolves.toMatchObject({ data: { id: a.id } });

    const b = await client.createRun({ input: 'Hook me raw', webhook: { url: hookUrl, secret: 'a-raw-secret' } });
    const raw = await delivered(b.id);
    await expect(
      verifyWebhook({ secret: 'a-raw-secret', headers: raw.headers as Record<string, string>, body: raw.body }),
    ).resolves.toMatchObject({ data: { id: b.id } });
    await expect(
      verifyWebhook({ secret: SECRET, headers: raw.headers as Record<string, string>, body: raw.body }),
    ).rejects.toBeInstanceOf(WebhookVerificationError);
  });

  it('refuses a tampered body, an old or future timestamp, a missing header and a wrong secret', async () => {
    const run = await client.createRun({ input: 'Hook me again', webhook: { url: hookUrl } });
    const { headers, body } = await delivered(run.id);
    const h = headers as Record<string, string>;
    const ts = Number(h['webhook-timestamp']);
    const refuse = (o: Partial<Parameters<typeof verifyWebhook>[0]>, why: RegExp) =>
      expect(verifyWebhook({ secret: SECRET, headers: h, body, ...o })).rejects.toThrow(why);

    await refuse({ body: body.replace('"completed"', '"failed"') }, /no webhook-signature matches/);
    await refuse({ body: body + ' ' }, /no webhook-signature matches/);
    await refuse({ now: (ts + 301) * 1000 }, /more than 300 s/);
    await refuse({ now: (ts - 301) * 1000 }, /more than 300 s/);
    await refuse({ now: (ts + 60) * 1000, toleranceSeconds: 30 }, /more than 30 s/);
    await refuse({ headers: { ...h, 'webhook-timestamp': String(ts - 3600) } }, /more than 300 s/);
    // A re-signed old timestamp is within tolerance only if the signature still matches: it does not.
    await refuse({ headers: { ...h, 'webhook-timestamp': String(ts + 1) } }, /no webhook-signature matches/);
    await refuse({ headers: { ...h, 'webhook-signature': undefined } }, /missing/);
    await refuse(
      { secret: 'whsec_' + Buffer.from('another-secret').toString('base64') },
      /no webhook-signature matches/,
    );
    // Several signatures (key rotation): one match is enough.
    await expect(
      verifyWebhook({
        secret: SECRET,
        headers: { ...h, 'webhook-signature': `v1,AAAA ${h['webhook-signature']}` },
        body,
      }),
    ).resolves.toBeTruthy();
    await expect(verifyWebhook({ secret: SECRET, headers: h, body, now: (ts + 299) * 1000 })).resolves.toBeTruthy();
  });
});

describe('the agentq CLI', () => {
  it('run --json prints the final run object and exits 0 when it completed', async () => {
    const r = await cli([
      'run',
      'Look up Alice for the CLI',
      '--json',
      '--tools',
      'crm__*',
      '--max-depth',
      '3',
      '--metadata',
      '{"via":"cli"}',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const run = JSON.parse(r.stdout);
    expect(run).toMatchObject({
      object: 'run',
      status: 'completed',
      max_depth: 3,
      metadata: { via: 'cli' },
      output: { content: 'Alice Jones works at Globex.' },
    });
    const msgs = await client.getMessages(run.id);
    expect(msgs[0]).toMatchObject({ role: 'user', content: 'Look up Alice for the CLI' });
  });

  it('run --follow shows each step, tool call with its duration, tokens and sub-runs, then the answer', async () => {
    const r = await cli(['run', 'Look up Alice, following', '--follow']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('Alice Jones works at Globex.\n');
    expect(r.stderr).toMatch(/^step 0 · scripted$/m);
    expect(r.stderr).toMatch(/1 tool call · 55 tokens \(50 \+ 5\)/);
    expect(r.stderr).toMatch(/→ crm__search_contacts \{"query":"Alice"\}/);
    expect(r.stderr).toMatch(/✓ crm__search_contacts \d+ ms/);
    expect(r.stderr).toMatch(/^step 1 · scripted$/m);
    expect(r.stderr).toMatch(/completed \(stop\) · depth 1\/10 · 2 steps · 1 tool call · 122 tokens/);
    expect(r.stderr).not.toContain('Globex'); // tool outputs only with --outputs

    const outputs = await cli(['run', 'Look up Alice, with outputs', '--follow', '--outputs']);
    expect(outputs.code, outputs.stderr).toBe(0);
    // The call's line, then what it returned on the line under it.
    const lines = outputs.stderr.split('\n');
    const call = lines.findIndex((l) => /✓ crm__search_contacts \d+ ms$/.test(l));
    expect(call, outputs.stderr).toBeGreaterThanOrEqual(0);
    const alice = { id: 'c2', name: 'Alice Jones', company: 'Globex', email: 'alice@globex.test' };
    expect(lines[call + 1]).toBe(`    ${JSON.stringify([alice])}`);

    const sub = await cli(['run', 'Delegate to a child', '--follow', '--subagents']);
    expect(sub.code, sub.stderr).toBe(0);
    expect(sub.stderr).toMatch(/→ agent_query/);
    expect(sub.stderr).toMatch(/↳ sub-run run_\w+ started by agent_query/);
    expect(sub.stderr).toMatch(/↳ sub-run run_\w+ completed/);
    expect(sub.stdout).toBe('the child said hi\n');
  });

  it('exits 1 for failed, 2 for incomplete, 3 for cancelled (Ctrl-C cancels)', async () => {
    const failed = await cli(['run', 'Break the model', '--json']);
    expect(failed.code, failed.stderr).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ status: 'failed' });

    const incomplete = await cli(['run', 'Loop forever', '--max-depth', '1', '--on-budget-exhausted', 'stop']);
    expect(incomplete.code, incomplete.stderr).toBe(2);
    expect(incomplete.stderr).toMatch(/incomplete \(max_depth\)/);

    let interrupted = false;
    const cancelled = await cli(['run', 'Hang for the CLI', '--follow'], {
      onStderr: (all, kill) => {
        if (!interrupted && all.includes('→ crm__sleep')) {
          interrupted = true;
          kill('SIGINT');
        }
      },
    });
    expect(cancelled.code, cancelled.stderr).toBe(3);
    expect(cancelled.stderr).toMatch(/cancelling run_\w+/);
    expect(cancelled.stderr).toMatch(/cancelled \(cancelled\)/);
  });

  it('runs ls | get | cancel | events', async () => {
    const done = await client.waitForRun((await client.createRun({ input: 'Look up Alice for ls' })).id);
    const ls = await cli(['runs', 'ls', '--limit', '3']);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+STOP\s+DEPTH\s+TOKENS\s+MODEL\s+CREATED$/);
    expect(ls.stdout).toMatch(
      new RegExp(`^${done.id}\\s+completed\\s+stop\\s+1\\s+122\\s+scripted\\s+${done.created_at}$`, 'm'),
    );
    expect(ls.stdout).toMatch(/more: agentq runs ls --after run_/);
    const lsJson = JSON.parse((await cli(['runs', 'ls', '--json', '--status', 'completed', '--limit', '2'])).stdout);
    expect(lsJson.data).toHaveLength(2);
    expect(lsJson.data.every((r: Run) => r.status === 'completed')).toBe(true);

    const get = await cli(['runs', 'get', done.id]);
    expect(get.code).toBe(0);
    expect(get.stdout).toContain('Alice Jones works at Globex.');
    expect(JSON.parse((await cli(['runs', 'get', done.id, '--json'])).stdout)).toEqual(done);

    const events = await cli(['runs', 'events', done.id, '--json']);
    expect(events.code).toBe(0);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0].event).toBe('run.queued');
    expect(lines.at(-1)).toMatchObject({ event: 'run.completed', data: { run: { id: done.id } } });
    const human = await cli(['runs', 'events', done.id]);
    expect(human.stdout).toMatch(/✓ crm__search_contacts/);

    const hung = await client.createRun({ input: 'Hang, then be cancelled by the CLI' });
    const cancel = await cli(['runs', 'cancel', hung.id]);
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toBe(`${hung.id} cancelled\n`);
    expect((await cli(['runs', 'events', hung.id])).code).toBe(3);
  });

  it('reports bad usage (64), API errors and an unreachable API (4)', async () => {
    expect((await cli(['frobnicate'])).code).toBe(64);
    expect((await cli(['run'])).code).toBe(64);
    expect((await cli(['run', 'x', '--max-depth', 'lots'])).code).toBe(64);
    const notFound = await cli(['runs', 'get', 'run_000000000000000000000']);
    expect(notFound.code).toBe(4);
    expect(notFound.stderr).toMatch(/404 not_found/);
    const invalid = await cli(['run', 'x', '--max-depth', '500']);
    expect(invalid.code).toBe(4);
    expect(invalid.stderr).toMatch(/max_depth/);
    const down = await cli(['runs', 'ls'], { env: { AGENTQ_URL: 'http://127.0.0.1:9' } });
    expect(down.code).toBe(4);
    expect(down.stderr).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);
    // A bad environment is refused before any request, in one line per variable.
    const badEnv = await cli(['runs', 'ls'], { env: { AGENTQ_URL: 'localhost:3000' } });
    expect(badEnv.code).toBe(64);
    expect(badEnv.stderr).toBe('agentq: AGENTQ_URL: must be an http:// or https:// URL (got "localhost:3000")\n');
    const badFlag = await cli(['runs', 'ls', '--url', 'localhost:3000']);
    expect(badFlag.code).toBe(64);
    expect(badFlag.stderr).toMatch(/--url must be an http:\/\/ or https:\/\/ URL/);
    const noKey = await cli(['runs', 'ls'], { env: { AGENTQ_API_KEY: '' } });
    expect(noKey.code).toBe(4);
    expect(noKey.stderr).toMatch(/401 unauthorized/);
  });

  it('is on PATH as `npx agentq` from the repository root', async () => {
    const r = await cli(['--help'], { command: ['npx', '--no-install', 'agentq'] });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^agentq: run and inspect agentq runs/);
    expect(r.stdout).toMatch(/Exit codes: 0 completed, 1 failed, 2 incomplete, 3 cancelled/);
  });
});

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { modelText, RetryableError } from '@agentq/shared/core';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startCrmMcpServer, type CrmMcpServer } from './fixtures/crm-mcp-server.js';
import { McpRegistry, parseMcpConfig } from '@agentq/tool-worker';

const MEMORY_SERVER = resolve(import.meta.dirname, '../node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const CALL = { timeoutMs: 5_000 };

/** A debug-level logger whose lines the test can read. */
function captureLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

function registryFor(servers: Record<string, unknown>, extra: { restartBackoffMs?: number } = {}) {
  const { logger, lines } = captureLogger();
  const registry = new McpRegistry({
    config: parseMcpConfig({ mcpServers: servers }, 'test'),
    logger,
    connectTimeoutMs: 5_000,
    ...extra,
  });
  return { registry, lines };
}

describe('McpRegistry over Streamable HTTP (crm fixture)', () => {
  let crm: CrmMcpServer;
  let registry: McpRegistry;
  let lines: Array<Record<string, unknown>>;
  const changes: string[][] = [];

  beforeAll(async () => {
    crm = await startCrmMcpServer();
    ({ registry, lines } = registryFor({ crm: { url: crm.url } }));
    registry.onToolsChanged((tools) => changes.push(tools.map((t) => t.name)));
    await registry.start();
  });
  afterAll(async () => {
    await registry.close();
    await crm.close();
  });

  it('lists tools as <server>__<tool> with schemas and annotations', () => {
    const tools = registry.tools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      ['count_calls', 'fail', 'get_contact', 'non_idempotent_write', 'search_contacts', 'sleep', 'update_contact'].map(
        (t) => `crm__${t}`,
      ),
    );
    const update = tools.find((t) => t.name === 'crm__update_contact');
    expect(update).toMatchObject({
      server: 'crm',
      tool: 'update_contact',
      description: "Set a contact's company",
      input_schema: { type: 'object', properties: { id: { type: 'string' }, company: { type: 'string' } } },
      annotations: { destructiveHint: true, idempotentHint: true },
    });
    expect(tools.find((t) => t.name === 'crm__non_idempotent_write')?.annotations).toBeUndefined();
    expect(changes).toHaveLength(1);
    expect(registry.status()).toEqual([
      { name: 'crm', transport: 'http', connected: true, pid: undefined, tools: 7, failures: 0 },
    ]);
  });

  it('returns a successful result as text', async () => {
    const out = await registry.call('crm__search_contacts', { query: 'bob' }, CALL);
    expect(out.kind).toBe('ok');
    expect(JSON.parse(out.text)).toEqual([{ id: 'c1', name: 'Bob Smith', company: 'Acme', email: 'bob@acme.test' }]);
  });

  it('accepts arguments as a JSON string, and an empty string as {}', async () => {
    await expect(registry.call('crm__get_contact', '{"id":"c2"}', CALL)).resolves.toMatchObject({
      kind: 'ok',
      text: expect.stringContaining('Alice Jones'),
    });
    const out = await registry.call('crm__count_calls', '', CALL);
    expect(out).toEqual({ kind: 'ok', text: String(crm.calls.length) });
  });

  it('makes an unknown tool an error the model sees, listing the tools', async () => {
    const out = await registry.call('crm__nope', {}, CALL);
    expect(out.kind).toBe('refused');
    expect(modelText('crm__nope', out)).toMatch(
      /^Error executing crm__nope: unknown tool; available tools: crm__\w+(, crm__\w+){6}$/,
    );
    await expect(registry.call('other__x', {}, CALL)).resolves.toMatchObject({
      kind: 'refused',
      text: expect.stringContaining('unknown tool'),
    });
  });

  it('makes bad JSON arguments an error without calling the server', async () => {
    const before = crm.calls.length;
    const bad = await registry.call('crm__get_contact', '{"id":', CALL);
    expect(bad.kind).toBe('invalid_arguments');
    expect(modelText('crm__get_contact', bad)).toMatch(
      /^Error executing crm__get_contact: arguments are not valid JSON: /,
    );
    await expect(registry.call('crm__get_contact', '[1,2]', CALL)).resolves.toEqual({
      kind: 'invalid_arguments',
      text: 'arguments must be a JSON object, got an array',
    });
    expect(crm.calls.length).toBe(before);
  });

  it('validates arguments against the input schema, naming each bad field', async () => {
    const before = crm.calls.length;
    const out = await registry.call('crm__update_contact', { company: 5 }, CALL);
    expect(out).toEqual({
      kind: 'invalid_arguments',
      text: "invalid arguments: must have required property 'id'; /company must be string",
    });
    expect(crm.calls.length).toBe(before);
  });

  it("passes a tool error result through as a tool_error in the tool's own words", async () => {
    await expect(registry.call('crm__fail', { message: 'boom' }, CALL)).resolves.toEqual({
      kind: 'tool_error',
      text: 'boom',
    });
    await expect(registry.call('crm__get_contact', { id: 'c9' }, CALL)).resolves.toEqual({
      kind: 'tool_error',
      text: 'no contact c9',
    });
  });

  it('times a slow tool out, and the server sees the cancellation', async () => {
    const out = await registry.call('crm__sleep', { ms: 2000, label: 't1' }, { timeoutMs: 200 });
    expect(out).toEqual({ kind: 'timeout', text: 'timed out after 200 ms' });
    // It returned before the tool finished (not after waiting the 2 s out).
    expect(crm.slept.map((s) => s.label)).not.toContain('t1');
    await expect.poll(() => crm.aborted).toContain('t1');
  });

  it('rethrows the caller abort and cancels the call on the server', async () => {
    const controller = new AbortController();
    const reason = new Error('run cancelled');
    setTimeout(() => controller.abort(reason), 100);
    await expect(
      registry.call('crm__sleep', { ms: 2000, label: 'a1' }, { timeoutMs: 5000, signal: controller.signal }),
    ).rejects.toBe(reason);
    await expect.poll(() => crm.aborted).toContain('a1');
    await expect(registry.call('crm__count_calls', {}, { timeoutMs: 1000, signal: controller.signal })).rejects.toBe(
      reason,
    );
  });

  it('shares one connection among concurrent calls', async () => {
    const outs = await Promise.all(
      Array.from({ length: 25 }, (_, i) => registry.call('crm__sleep', { ms: 50, label: `p${i}` }, CALL)),
    );
    expect(outs.map((o) => o.text)).toEqual(Array.from({ length: 25 }, (_, i) => `slept 50 ms p${i}`));
    expect(lines.filter((l) => l.msg === 'MCP server connected')).toHaveLength(1);
  });

  it('updates state on the server', async () => {
    const out = await registry.call('crm__update_contact', { id: 'c1', company: 'EPAM' }, CALL);
    expect(JSON.parse(out.text)).toMatchObject({ id: 'c1', company: 'EPAM' });
    expect(crm.contacts.get('c1')?.company).toBe('EPAM');
  });
});

describe('McpRegistry when an HTTP server is unreachable', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('start() does not throw, and a call throws RetryableError', async () => {
    const port = await freePort();
    const { registry, lines } = registryFor(
      { dead: { url: `http://127.0.0.1:${port}/mcp` } },
      { restartBackoffMs: 10_000 },
    );
    cleanup.push(() => registry.close());
    await expect(registry.start()).resolves.toBeUndefined();
    expect(registry.tools()).toEqual([]);
    expect(lines.find((l) => l.msg === 'MCP server failed to connect')).toMatchObject({
      mcp_server: 'dead',
      err: expect.stringContaining('ECONNREFUSED'),
    });
    const err = await registry.call('dead__anything', {}, CALL).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err).toMatchObject({ code: 'tool_server_unavailable', retryable: true });
  });

  it('connects lazily once the server comes up', async () => {
    const port = await freePort();
    const { registry } = registryFor({ late: { url: `http://127.0.0.1:${port}/mcp` } }, { restartBackoffMs: 10_000 });
    cleanup.push(() => registry.close());
    await registry.start();
    const crm = await startCrmMcpServer({ port });
    cleanup.push(() => crm.close());
    await expect(registry.call('late__count_calls', {}, CALL)).resolves.toEqual({ kind: 'ok', text: '1' });
  });

  it('throws RetryableError when a known server goes away, and recovers when it is back', async () => {
    const port = await freePort();
    let crm = await startCrmMcpServer({ port });
    const { registry } = registryFor({ crm: { url: crm.url } }, { restartBackoffMs: 10_000 });
    cleanup.push(() => registry.close());
    await registry.start();
    await expect(registry.call('crm__count_calls', {}, CALL)).resolves.toMatchObject({ kind: 'ok' });
    await crm.close();
    // A read-only call may be sent again, so it waits for the server (the job retries it).
    await expect(registry.call('crm__get_contact', { id: 'c1' }, CALL)).rejects.toMatchObject({
      code: 'tool_server_unavailable',
    });
    // A restarted server has forgotten our session: the registry opens a new one.
    crm = await startCrmMcpServer({ port });
    cleanup.push(() => crm.close());
    await expect(registry.call('crm__get_contact', { id: 'c1' }, CALL)).resolves.toMatchObject({ kind: 'ok' });
    expect(crm.calls.map(({ tool, args }) => ({ tool, args }))).toEqual([{ tool: 'get_contact', args: { id: 'c1' } }]);
  });

  it('never sends a non-idempotent call twice: an answer lost on its way back is unknown_outcome', async () => {
    const port = await freePort();
    const first = await startCrmMcpServer({ port });
    const { registry } = registryFor({ crm: { url: first.url } }, { restartBackoffMs: 10_000 });
    cleanup.push(() => registry.close());
    await registry.start();
    // The server takes the write, then goes away before it answers, and comes back at once: the
    // write may have had its effect, so the registry must not send it to the new server.
    const call = registry.call('crm__non_idempotent_write', { key: 'k1', ms: 2_000 }, CALL).catch((e: unknown) => e);
    await expect.poll(() => first.calls.map((c) => c.args.key)).toEqual(['k1']);
    await first.close();
    const again = await startCrmMcpServer({ port });
    cleanup.push(() => again.close());
    expect(await call).toEqual({ kind: 'unknown_outcome', text: expect.stringMatching(/^the outcome is unknown: /) });
    // The next write finds its session gone from the new server (a 404: it never ran), and is sent
    // again on a new session, once; k1 never reached the new server.
    await expect(registry.call('crm__non_idempotent_write', { key: 'k2' }, CALL)).resolves.toEqual({
      kind: 'ok',
      text: '["k2"]',
    });
    expect(again.calls.map((c) => c.args.key)).toEqual(['k2']);
    expect(first.calls.map((c) => c.args.key)).toEqual(['k1']);
  });

  it('sends a non-idempotent call again only when a restarted server proves it never ran', async () => {
    const port = await freePort();
    let crm = await startCrmMcpServer({ port });
    const { registry, lines } = registryFor({ crm: { url: crm.url } }, { restartBackoffMs: 10_000 });
    cleanup.push(() => registry.close());
    await registry.start();
    await crm.close();
    crm = await startCrmMcpServer({ port });
    cleanup.push(() => crm.close());
    const out = await registry.call('crm__non_idempotent_write', { key: 'k1' }, CALL);
    // What the registry saw decides what it may do: the old session's 404 proves the write never
    // ran, and it is sent again on a new session; a pooled socket that broke under the request
    // may have delivered it, and the call ends unknown_outcome without a second send.
    const faults = lines.filter((l) => l.msg === 'MCP server connection failed during a call').map((l) => l.fault);
    const k1 = crm.calls.filter((c) => c.args.key === 'k1');
    if (faults[0] === 'lost') {
      expect(out).toEqual({ kind: 'unknown_outcome', text: expect.stringMatching(/^the outcome is unknown: /) });
      expect(k1).toEqual([]);
    } else {
      expect(faults).toEqual(['not_delivered']);
      expect(out).toEqual({ kind: 'ok', text: '["k1"]' });
      expect(k1).toHaveLength(1);
    }
  });

  it('opens a new session transparently when a restarted server rejects the old one', async () => {
    const port = await freePort();
    let crm = await startCrmMcpServer({ port });
    const { registry, lines } = registryFor({ crm: { url: crm.url } }, { restartBackoffMs: 10_000 });
    cleanup.push(() => registry.close());
    await registry.start();
    await crm.close();
    crm = await startCrmMcpServer({ port });
    cleanup.push(() => crm.close());
    // A 404 for the old session, or a dead pooled socket: a read-only tool is simply sent again.
    await expect(registry.call('crm__get_contact', { id: 'c2' }, CALL)).resolves.toMatchObject({ kind: 'ok' });
    expect(crm.calls.map(({ tool, args }) => ({ tool, args }))).toEqual([{ tool: 'get_contact', args: { id: 'c2' } }]);
    expect(lines.filter((l) => l.msg === 'MCP server connected')).toHaveLength(2);
  });
});

describe('McpRegistry over stdio (server-memory)', () => {
  let dir: string;
  let registry: McpRegistry;
  let lines: Array<Record<string, unknown>>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentq-mcp-memory-'));
    ({ registry, lines } = registryFor(
      {
        memory: {
          command: process.execPath,
          args: [MEMORY_SERVER],
          env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') },
        },
      },
      { restartBackoffMs: 50 },
    ));
    await registry.start();
  });
  afterAll(async () => {
    await registry.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('lists the memory tools', () => {
    const names = registry.tools().map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining(['memory__create_entities', 'memory__read_graph', 'memory__search_nodes']),
    );
    expect(registry.tools().every((t) => t.server === 'memory' && t.name === `memory__${t.tool}`)).toBe(true);
  });

  it('creates entities, then reads and searches them', async () => {
    const created = await registry.call(
      'memory__create_entities',
      JSON.stringify({ entities: [{ name: 'Bob', entityType: 'person', observations: ['works at Acme'] }] }),
      CALL,
    );
    expect(created.kind).toBe('ok');
    const graph = await registry.call('memory__read_graph', {}, CALL);
    expect(JSON.parse(graph.text)).toMatchObject({
      entities: [{ name: 'Bob', entityType: 'person', observations: ['works at Acme'] }],
    });
    const found = await registry.call('memory__search_nodes', { query: 'Acme' }, CALL);
    expect(found.text).toContain('Bob');
  });

  it('validates nested arguments', async () => {
    const out = await registry.call('memory__create_entities', { entities: [{ name: 'x', observations: [] }] }, CALL);
    expect(out).toEqual({
      kind: 'invalid_arguments',
      text: "invalid arguments: /entities/0 must have required property 'entityType'",
    });
  });

  it("logs the server's stderr at debug level", () => {
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 20, mcp_server: 'memory', stderr: expect.stringContaining('running on stdio') }),
    );
  });

  it('restarts a killed server, and the next call succeeds', async () => {
    const pid = registry.status()[0].pid;
    expect(pid).toBeTypeOf('number');
    process.kill(pid as number, 'SIGKILL');
    // Restarted in the background, before any call asks for it.
    await expect
      .poll(() => registry.status()[0].connected && registry.status()[0].pid !== pid, { timeout: 5_000 })
      .toBe(true);
    const graph = await registry.call('memory__read_graph', {}, CALL);
    expect(graph.text).toContain('Bob');
  });

  it('survives a call racing a kill: at worst a RetryableError, then the next call succeeds', async () => {
    const pid = registry.status()[0].pid as number;
    process.kill(pid, 'SIGKILL');
    const first = await registry.call('memory__read_graph', {}, CALL).catch((e: unknown) => e);
    if (first instanceof Error) expect(first).toMatchObject({ code: 'tool_server_unavailable' });
    else expect(first).toMatchObject({ kind: 'ok' });
    await expect(registry.call('memory__read_graph', {}, CALL)).resolves.toMatchObject({
      kind: 'ok',
      text: expect.stringContaining('Bob'),
    });
  });

  it('caps stderr lines and reports the last ones when a server dies at start', async () => {
    const script =
      "process.stderr.write('x'.repeat(10000) + '\\n'); " +
      "for (let i = 0; i < 200; i++) process.stderr.write('line ' + i + '\\n'); " +
      "process.stderr.write('fatal: bad config\\n', () => process.exit(1));";
    const { registry: own, lines: logs } = registryFor(
      { broken: { command: process.execPath, args: ['-e', script] } },
      { restartBackoffMs: 60_000 },
    );
    await own.start();
    await own.close();
    const stderr = logs.filter((l) => l.msg === 'MCP server stderr').map((l) => String(l.stderr));
    expect(stderr[0]).toBe(`${'x'.repeat(2048)}…[truncated]`);
    expect(stderr).toHaveLength(50);
    expect(logs.find((l) => l.msg === 'MCP server failed to connect')).toMatchObject({
      mcp_server: 'broken',
      stderr: expect.arrayContaining(['fatal: bad config']),
    });
  });

  it('close() stops the child process', async () => {
    const { registry: own } = registryFor({
      m: { command: process.execPath, args: [MEMORY_SERVER], env: { MEMORY_FILE_PATH: join(dir, 'm2.jsonl') } },
    });
    await own.start();
    const pid = own.status()[0].pid as number;
    expect(() => process.kill(pid, 0)).not.toThrow();
    await own.close();
    await own.close();
    await expect.poll(() => isAlive(pid)).toBe(false);
    await expect(own.call('m__read_graph', {}, CALL)).rejects.toBeInstanceOf(RetryableError);
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

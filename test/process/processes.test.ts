import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { Queue } from 'bullmq';
import { cellPrefix } from '@agentq/shared/jobs';
import { startScriptedLlm, type ScriptedLlm } from '@agentq/scripted-llm';
import { startCrmMcpServer, type CrmMcpServer } from '../fixtures/crm-mcp-server.js';
import { freePort } from '../fixtures/redis.js';
import type { RunObject } from '@agentq/shared/core';
import type { GetBody } from '../fixtures/api-client.js';

// The built services as an operator runs them: `node services/<name>/dist/main.js`, configured
// only through the environment (API.md, "Processes and configuration").

const root = fileURLToPath(new URL('../..', import.meta.url));
const SERVICES = ['api', 'agent-worker', 'tool-worker'] as const;
type Service = (typeof SERVICES)[number];
const mainOf = (s: Service) => join(root, 'services', s, 'dist', 'main.js');

interface Proc {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  /** Resolves with the exit code (or the signal that killed it). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running = new Set<ChildProcess>();

function start(service: Service, env: Record<string, string>): Proc {
  // Only what we pass: the services must read nothing else from the environment.
  const child = spawn(process.execPath, [mainOf(service)], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    }),
  );
  return { child, out: () => out, err: () => err, exited };
}

/** Waits for the process to exit, failing (and killing it) if it has not after `ms`. */
async function exitOf(p: Proc, ms = 10_000) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  const r = await Promise.race([p.exited, timeout]);
  clearTimeout(timer);
  if (r === 'timeout') {
    p.child.kill('SIGKILL');
    throw new Error(
      `process did not exit within ${ms} ms\nstdout: ${p.out().slice(-2000)}\nstderr: ${p.err().slice(-2000)}`,
    );
  }
  return r;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, p: Proc, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) {
      throw new Error(
        `${what}: the process exited (${p.child.exitCode ?? p.child.signalCode})\nstdout: ` +
          `${p.out().slice(-2000)}\nstderr: ${p.err().slice(-2000)}`,
      );
    }
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${ms} ms\nstdout: ${p.out().slice(-2000)}\nstderr: ${p.err().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const STACK_FRAME = /^\s+at .+(:\d+:\d+|\(native\)|<anonymous>)\)?$/m;
const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');
// A worker is registered in Redis a moment before its start-up log line.
const saysStarted = (p: Proc) => lines(p.out()).some((l) => /"msg":"[^"]*\bstarted\b/.test(l));
// Logged by main.ts once its signal handlers are in place, before it connects to anything.
const saysStarting = (p: Proc) => lines(p.out()).some((l) => /"msg":"starting"/.test(l));

/**
 * A TCP server on loopback that reads a client's handshake (ioredis sends it whole without
 * waiting for replies) and hangs up, counting the attempts of each connection by the name it
 * gives (`CLIENT SETNAME`): a Redis that never answers.
 */
async function hangingUpRedis() {
  const attempts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let handshake = '';
    const hangUp = (name: string) => {
      attempts.set(name, (attempts.get(name) ?? 0) + 1);
      socket.destroy();
    };
    socket.on('data', (d) => {
      handshake += d.toString('latin1');
      const named = /setname\r\n\$\d+\r\n([^\r]*)\r\n/i.exec(handshake);
      if (named) hangUp(named[1]);
      else if (/LIB-NAME/i.test(handshake)) hangUp('(unnamed)');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    attempts,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

let redisUrl: string;
const tmp = mkdtempSync(join(tmpdir(), 'agentq-proc-'));
const prefix = () => `p${randomBytes(4).toString('hex')}`;

beforeAll(() => {
  redisUrl = inject('redisUrl');
  if (!SERVICES.every((s) => existsSync(mainOf(s)))) {
    const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit', env: process.env });
    if (r.status !== 0) throw new Error('npm run build failed');
  }
}, 300_000);

afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('refusing to start with a bad environment', () => {
  async function refuses(service: Service, env: Record<string, string>, names: string[]) {
    const p = start(service, { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix(), ...env });
    const { code } = await exitOf(p);
    const all = `${p.out()}\n${p.err()}`;
    expect(code, all).not.toBe(0);
    expect(code, all).not.toBeNull();
    expect(all).not.toMatch(STACK_FRAME);
    // One line per bad variable, each naming it.
    const errLines = lines(p.err());
    for (const name of names)
      expect(
        errLines.filter((l) => l.includes(name)),
        `a line naming ${name} in:\n${p.err()}`,
      ).toHaveLength(1);
    expect(errLines, p.err()).toHaveLength(names.length);
    return p;
  }

  it('api: REDIS_URL=foo and PORT=abc', async () => {
    const p = await refuses('api', { REDIS_URL: 'foo', PORT: 'abc' }, ['REDIS_URL', 'PORT']);
    expect(p.err()).toContain('foo');
    expect(p.err()).toContain('abc');
  });

  it('api: MAX_BODY_BYTES, LOG_LEVEL and QUEUE_PREFIX', async () => {
    await refuses('api', { MAX_BODY_BYTES: 'huge', LOG_LEVEL: 'loud', QUEUE_PREFIX: 'a:b' }, [
      'MAX_BODY_BYTES',
      'LOG_LEVEL',
      'QUEUE_PREFIX',
    ]);
  });

  it('api: a short API key, without printing the keys', async () => {
    const p = await refuses('api', { API_KEYS: 'a-perfectly-good-key,short' }, ['API_KEYS']);
    expect(`${p.out()}${p.err()}`).not.toContain('a-perfectly-good-key');
  });

  it('agent-worker: AGENT_CONCURRENCY=0 and REDIS_URL=foo', async () => {
    await refuses('agent-worker', { AGENT_CONCURRENCY: '0', REDIS_URL: 'foo' }, ['AGENT_CONCURRENCY', 'REDIS_URL']);
  });

  it('agent-worker: OPENAI_BASE_URL without http(s):// (a forgotten scheme)', async () => {
    await refuses('agent-worker', { OPENAI_BASE_URL: 'localhost:11434/v1' }, ['OPENAI_BASE_URL']);
  });

  it('tool-worker: TOOL_CONCURRENCY=abc', async () => {
    await refuses('tool-worker', { TOOL_CONCURRENCY: 'abc' }, ['TOOL_CONCURRENCY']);
  });

  it('tool-worker: MCP_CONFIG=/nonexistent', async () => {
    const p = await refuses('tool-worker', { MCP_CONFIG: '/nonexistent/mcp.json' }, ['MCP_CONFIG']);
    expect(p.err()).toContain('/nonexistent/mcp.json');
  });

  it('tool-worker: MCP_CONFIG that is not valid JSON', async () => {
    const file = join(tmp, 'broken.json');
    writeFileSync(file, '{"mcpServers": {');
    await refuses('tool-worker', { MCP_CONFIG: file }, ['MCP_CONFIG']);
  });

  it('tool-worker: MCP_CONFIG with a bad server entry', async () => {
    const file = join(tmp, 'bad-server.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { crm: { url: 'not a url' } } }));
    await refuses('tool-worker', { MCP_CONFIG: file }, ['MCP_CONFIG']);
  });

  it('tool-worker: a bad variable and a missing MCP_CONFIG are both named at once', async () => {
    await refuses('tool-worker', { TOOL_CONCURRENCY: '0', MCP_CONFIG: '/nonexistent/mcp.json' }, [
      'TOOL_CONCURRENCY',
      'MCP_CONFIG',
    ]);
  });
});

describe('starting and stopping on SIGTERM', () => {
  it('api: answers /healthz and /readyz on HOST:PORT, then exits 0 on SIGTERM', async () => {
    const port = await freePort();
    const p = start('api', {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix(),
      PORT: String(port),
      HOST: '127.0.0.1',
      API_KEYS: 'proc-test-key-123',
    });
    const base = `http://127.0.0.1:${port}`;
    await until('/healthz answers 200', async () => (await fetch(`${base}/healthz`)).status === 200, p);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    // API_KEYS is honoured: a key is needed for /v1.
    expect((await fetch(`${base}/v1/runs`)).status).toBe(401);
    expect((await fetch(`${base}/v1/runs`, { headers: { authorization: 'Bearer proc-test-key-123' } })).status).toBe(
      200,
    );
    p.child.kill('SIGTERM');
    const { code } = await exitOf(p, 10_000);
    expect(code, p.err()).toBe(0);
    expect(`${p.out()}${p.err()}`).not.toMatch(STACK_FRAME);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });

  it('api: warns at start when API_KEYS is not set', async () => {
    const port = await freePort();
    const p = start('api', { REDIS_URL: redisUrl, QUEUE_PREFIX: prefix(), PORT: String(port), HOST: '127.0.0.1' });
    await until(
      '/healthz answers 200',
      async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200,
      p,
    );
    expect(`${p.out()}${p.err()}`).toMatch(/API_KEYS/);
    p.child.kill('SIGTERM');
    expect((await exitOf(p, 10_000)).code).toBe(0);
  });

  async function workersOn(queueName: string, queuePrefix: string) {
    const q = new Queue(queueName, { connection: { url: redisUrl }, prefix: cellPrefix(queuePrefix, 0) });
    try {
      return (await q.getWorkers()).length;
    } finally {
      await q.close();
    }
  }

  it('agent-worker: takes the agent queue, then exits 0 on SIGTERM', async () => {
    const qp = prefix();
    const p = start('agent-worker', {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: qp,
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      MODEL: 'x',
    });
    await until('a worker on the agent queue', async () => (await workersOn('agent', qp)) > 0 && saysStarted(p), p);
    p.child.kill('SIGTERM');
    const { code } = await exitOf(p, 10_000);
    expect(code, p.err()).toBe(0);
    expect(`${p.out()}${p.err()}`).not.toMatch(STACK_FRAME);
  });

  it.each(SERVICES)('%s: a SIGTERM while it still waits for Redis exits 0 at once', async (service) => {
    // A "Redis" that hangs up on every connection: the service keeps trying to connect when the signal comes.
    const redis = await hangingUpRedis();
    try {
      const p = start(service, {
        REDIS_URL: `redis://127.0.0.1:${redis.port}`,
        QUEUE_PREFIX: prefix(),
        PORT: '0',
        HOST: '127.0.0.1',
        MODEL: 'x',
      });
      await until('the start-up line', async () => saysStarting(p), p);
      // Let it fail to connect and try again: a connection that comes back after being dropped.
      await until(
        'a connection attempt after a failed one',
        async () => [...redis.attempts].some(([name, n]) => name !== '(unnamed)' && n >= 2),
        p,
      );
      expect(p.child.exitCode).toBeNull();
      p.child.kill('SIGTERM');
      const { code, signal } = await exitOf(p, 5_000);
      expect({ code, signal }, p.err()).toEqual({ code: 0, signal: null });
      // Connection errors while waiting are not printed raw: every line is a JSON log line.
      expect([...lines(p.out()), ...lines(p.err())].filter((l) => !l.startsWith('{'))).toEqual([]);
    } finally {
      await redis.close();
    }
  });

  describe('tool-worker', () => {
    let crm: CrmMcpServer;
    beforeAll(async () => {
      crm = await startCrmMcpServer();
    });
    afterAll(async () => crm?.close());

    it('connects its MCP servers, takes the tool queue, then exits 0 on SIGTERM', async () => {
      const qp = prefix();
      const file = join(tmp, 'mcp.json');
      writeFileSync(file, JSON.stringify({ mcpServers: { crm: { url: crm.url } } }));
      const p = start('tool-worker', { REDIS_URL: redisUrl, QUEUE_PREFIX: qp, MCP_CONFIG: file });
      await until('a worker on the tool queue', async () => (await workersOn('tool', qp)) > 0 && saysStarted(p), p);
      p.child.kill('SIGTERM');
      const { code } = await exitOf(p, 10_000);
      expect(code, p.err()).toBe(0);
      expect(`${p.out()}${p.err()}`).not.toMatch(STACK_FRAME);
    });
  });
});

describe('the three built services together', () => {
  let llm: ScriptedLlm;
  let crm: CrmMcpServer;
  beforeAll(async () => {
    crm = await startCrmMcpServer();
    llm = await startScriptedLlm({
      handler: (req) => {
        const tools = req.messages.filter((m) => m.role === 'tool');
        if (tools.length === 0) return { tool_calls: [{ name: 'crm__get_contact', arguments: { id: 'c1' } }] };
        return { content: `Found ${JSON.parse(tools[0].content as string).name}.` };
      },
    });
  });
  afterAll(async () => {
    await llm?.close();
    await crm?.close();
  });

  it('run a tool-using run to completion, then all exit 0 on SIGTERM', async () => {
    const port = await freePort();
    const file = join(tmp, 'mcp-all.json');
    writeFileSync(file, JSON.stringify({ mcpServers: { crm: { url: crm.url } } }));
    const env = {
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix(),
      PORT: String(port),
      HOST: '127.0.0.1',
      OPENAI_BASE_URL: llm.baseURL,
      OPENAI_API_KEY: 'sk-test',
      MODEL: 'scripted',
      MCP_CONFIG: file,
    };
    const procs = { tool: start('tool-worker', env), agent: start('agent-worker', env), api: start('api', env) };
    const base = `http://127.0.0.1:${port}`;
    await until('/healthz', async () => (await fetch(`${base}/healthz`)).ok, procs.api);
    await until('the agent-worker started', async () => saysStarted(procs.agent), procs.agent);
    await until(
      'crm tools listed',
      async () =>
        ((await (await fetch(`${base}/v1/tools`)).json()) as GetBody<'/v1/tools'>).data.some(
          (t) => t.name === 'crm__get_contact',
        ),
      procs.tool,
    );

    const res = await fetch(`${base}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Who is c1?' }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const run = await until(
      'the run finishes',
      async () => {
        const r = (await (await fetch(`${base}/v1/runs/${id}`)).json()) as RunObject;
        return ['completed', 'failed', 'cancelled', 'incomplete'].includes(r.status) ? r : undefined;
      },
      procs.agent,
    );
    expect(run).toMatchObject({ status: 'completed', depth: 1, output: { content: 'Found Bob Smith.' } });

    for (const p of Object.values(procs)) p.child.kill('SIGTERM');
    for (const [name, p] of Object.entries(procs)) {
      const { code } = await exitOf(p, 10_000);
      expect(code, `${name}: ${p.err()}`).toBe(0);
      expect(`${p.out()}${p.err()}`, name).not.toMatch(STACK_FRAME);
    }
  });
});

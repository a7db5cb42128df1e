import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis, type RedisOptions } from 'ioredis';
import { startScriptedLlm, type Handler, type ScriptedLlm } from '@agentq/scripted-llm';
import { certificateFor127 } from '../fixtures/certificate.js';
import { startCrmMcpServer, type CrmMcpServer } from '../fixtures/crm-mcp-server.js';
import { freePort, spawnRedisServer, type SpawnedRedis } from '../fixtures/redis.js';
import { startCluster, startSentinel, type NodeSecurity } from '../fixtures/redis-topologies.js';
import { startService, waitForOutput, type ServiceName, type ServiceProcess } from '../fixtures/processes.js';
import { waitFor } from '../fixtures/wait.js';
import type { RunObject } from '@agentq/shared/core';

// REDIS_URL's user, password and TLS, against Redis servers that want them (started here): every
// service connects with what the URL says, and one that cannot says why in one line and waits.

const handler: Handler = (req) =>
  req.messages.some((m) => m.role === 'tool')
    ? { content: `found: ${String(req.messages.at(-1)!.content).slice(0, 40)}` }
    : { tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'Ada' } }] };

let dir: string;
let llm: ScriptedLlm;
let crm: CrmMcpServer;
let caFile: string;
const servers: SpawnedRedis[] = [];
const started: ServiceProcess[] = [];
/** Starts a built service (stopped after the test). */
const launch = (name: ServiceName, env: Record<string, string>) => {
  const p = startService(name, env);
  started.push(p);
  return p;
};

/** A redis-server of this file's own on a free port, once it answers (`client`: how to reach it). */
async function redisServer(args: string[], client: RedisOptions, tls = false): Promise<number> {
  const server = await spawnRedisServer({ dir, args, tls, client });
  servers.push(server);
  return server.port;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentq-redis-auth-'));
  llm = await startScriptedLlm({ handler });
  crm = await startCrmMcpServer();
  writeFileSync(join(dir, 'mcp.json'), JSON.stringify({ mcpServers: { crm: { url: crm.url } } }));
  // A certificate of its own for 127.0.0.1, trusted by no one until NODE_EXTRA_CA_CERTS names it.
  const pems = await certificateFor127();
  caFile = join(dir, 'redis.pem');
  writeFileSync(caFile, pems.cert);
  writeFileSync(join(dir, 'redis.key'), pems.key);
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.kill()));
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await llm?.close();
  await crm?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The environment of the three services on `redisUrl`, under a prefix of the test's own. */
async function envFor(redisUrl: string, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `auth${Math.random().toString(36).slice(2, 8)}`,
    PORT: String(await freePort()),
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: llm.baseURL,
    OPENAI_API_KEY: 'test',
    MODEL: 'scripted',
    MCP_CONFIG: join(dir, 'mcp.json'),
    LOG_LEVEL: 'info',
    ...extra,
  };
}

/** Starts the three services on `env` and runs one tool-using run to its end. */
async function runOne(env: Record<string, string>): Promise<RunObject> {
  const procs = (['api', 'agent-worker', 'tool-worker'] as const).map((name) => launch(name, env));
  await Promise.all(procs.map((p) => waitForOutput(p, p.name === 'api' ? /api listening/ : /worker started/)));
  const base = `http://127.0.0.1:${env.PORT}`;
  const res = await fetch(`${base}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: 'find Ada' }),
  });
  expect(res.status).toBe(202);
  const { id } = (await res.json()) as { id: string };
  return waitFor(
    async () => {
      const run = (await (await fetch(`${base}/v1/runs/${id}`)).json()) as RunObject;
      return ['completed', 'failed', 'cancelled', 'incomplete'].includes(run.status) ? run : null;
    },
    { what: `run ${id} to end`, timeoutMs: 20_000, intervalMs: 50 },
  );
}

describe('a Redis with a user and password', () => {
  // The password has characters a URL must encode.
  const password = 'p@ss:w/rd';
  const acl = ['--user', 'default', 'off', '--user', 'app', 'on', `>${password}`, '~*', '&*', '+@all'];
  const url = (port: number, pass: string) => `redis://app:${encodeURIComponent(pass)}@127.0.0.1:${port}`;

  it('every service connects as the URL says, and a run with a tool call completes', async () => {
    const port = await redisServer(acl, { username: 'app', password });
    const run = await runOne(await envFor(url(port, password)));
    expect(run.status).toBe('completed');
    expect(run.output?.content).toMatch(/^found: /);
  }, 60_000);

  it('refused: each service says so in one line and waits, then goes on by itself once Redis takes the password', async () => {
    const port = await redisServer(acl, { username: 'app', password });
    const env = await envFor(url(port, 'rotated-secret'));
    const api = launch('api', env);
    const agent = launch('agent-worker', env);
    const tool = launch('tool-worker', env);
    const refused = /Redis refused the user or password in REDIS_URL \(WRONGPASS/;
    await waitForOutput(agent, refused);
    await waitForOutput(tool, refused);
    await waitForOutput(api, /api listening/);
    await waitForOutput(api, /not reachable yet; answering 503 until it is: Redis refused the user or password/);
    const ready = await fetch(`http://127.0.0.1:${env.PORT}/readyz`);
    expect(ready.status).toBe(503);
    // A second later the worker still waits (it has not exited), having said why once.
    await new Promise((r) => setTimeout(r, 1000));
    for (const p of [agent, tool]) {
      expect(p.child.exitCode).toBeNull();
      expect(p.output.filter((l) => refused.test(l))).toHaveLength(1);
      expect(p.output.some((l) => /worker started/.test(l))).toBe(false);
    }
    // The new password is added to the user: both go on without a restart.
    const admin = new Redis({ port, host: '127.0.0.1', username: 'app', password });
    await admin.call('ACL', 'SETUSER', 'app', '>rotated-secret');
    admin.disconnect();
    await waitForOutput(agent, /agent-worker started/);
    await waitForOutput(tool, /tool-worker started/);
    expect(agent.output.some((l) => /Redis answers now/.test(l))).toBe(true);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status === 200, {
      what: '/readyz 200',
      timeoutMs: 10_000,
    });
    // The password is in no line either wrote.
    for (const p of [api, agent, tool]) expect(p.output.filter((l) => l.includes('rotated-secret'))).toEqual([]);
  }, 60_000);
});

describe('a Redis over TLS (rediss://) with a password', () => {
  const tls = () => [
    '--tls-cert-file',
    caFile,
    '--tls-key-file',
    join(dir, 'redis.key'),
    '--tls-ca-cert-file',
    caFile,
    '--tls-auth-clients',
    'no',
    '--requirepass',
    's3cret',
  ];
  const client = () => ({ password: 's3cret', tls: { ca: readFileSync(caFile) } });

  it('with its certificate trusted through NODE_EXTRA_CA_CERTS, a run with a tool call completes', async () => {
    const port = await redisServer(tls(), client(), true);
    const run = await runOne(await envFor(`rediss://:s3cret@127.0.0.1:${port}`, { NODE_EXTRA_CA_CERTS: caFile }));
    expect(run.status).toBe('completed');
    expect(run.output?.content).toMatch(/^found: /);
  }, 60_000);

  it('a certificate not trusted, naming another host, ' +
    'or the port spoken to without TLS: the service says which and waits', async () => {
    const port = await redisServer(tls(), client(), true);
    const cases = [
      {
        env: await envFor(`rediss://:s3cret@127.0.0.1:${port}`),
        says: /the TLS certificate of Redis is not trusted .*set NODE_EXTRA_CA_CERTS/,
      },
      {
        env: await envFor(`rediss://:s3cret@localhost:${port}`, { NODE_EXTRA_CA_CERTS: caFile }),
        says: /the TLS certificate of Redis does not name the host in REDIS_URL/,
      },
      {
        env: await envFor(`redis://:s3cret@127.0.0.1:${port}`),
        says: /Redis closed the connection .*one that speaks TLS wants rediss:\/\//,
      },
    ];
    const procs = cases.map(({ env }) => launch('agent-worker', env));
    await Promise.all(procs.map((p, i) => waitForOutput(p, cases[i]!.says)));
    for (const p of procs) {
      expect(p.child.exitCode).toBeNull();
      expect(p.output.some((l) => /worker started/.test(l))).toBe(false);
    }
  }, 60_000);
});

describe('a Redis Cluster and a Sentinel group, over TLS with a password (rediss+cluster://, rediss+sentinel://)', () => {
  const security = (): NodeSecurity => ({
    password: 's3cret',
    tls: { cert: caFile, key: join(dir, 'redis.key'), ca: caFile },
  });

  /**
   * Starts the services on the topology's URL and runs one tool-using run to its end (after
   * `first`, if given), then stops the topology, whatever happened.
   */
  async function completesOn(
    topology: { url: string; stop(): Promise<void> },
    url: RegExp,
    env: Record<string, string> = {},
    first?: () => Promise<void>,
  ): Promise<void> {
    try {
      expect(topology.url).toMatch(url);
      await first?.();
      const run = await runOne(await envFor(topology.url, { NODE_EXTRA_CA_CERTS: caFile, ...env }));
      expect(run.status).toBe('completed');
      expect(run.output?.content).toMatch(/^found: /);
    } finally {
      await Promise.all(started.splice(0).map((p) => p.kill()));
      await topology.stop();
    }
  }

  it('on a Cluster of three masters, with a cell on each, a run with a tool call completes', async () => {
    await completesOn(
      await startCluster({ masters: 3, security: security() }),
      /^rediss\+cluster:\/\/:s3cret@127\.0\.0\.1:/,
      { CELLS: '3' },
    );
  }, 90_000);

  it('through Sentinels (TLS too, and a password of their own), ' +
    'a run with a tool call completes; their certificate not trusted, a worker says so', async () => {
    const sentinel = await startSentinel({ security: { ...security(), sentinelPassword: 'sentinel:pw' } });
    await completesOn(
      sentinel,
      /^rediss\+sentinel:\/\/:s3cret@127\.0\.0\.1:.*\/mymaster\?sentinel_password=sentinel%3Apw$/,
      {},
      async () => {
        const untrusted = launch('agent-worker', await envFor(sentinel.url));
        await waitForOutput(
          untrusted,
          /waiting for Redis: no Sentinel answers: the TLS certificate of Redis is not trusted .*NODE_EXTRA_CA_CERTS/,
        );
        await untrusted.kill();
      },
    );
  }, 90_000);
});

import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startScriptedLlm, type ScriptedLlm } from '@agentq/scripted-llm';
import { certificateFor127 } from '../fixtures/certificate.js';
import { freePort } from '../fixtures/redis.js';
import { serviceGroup, waitForOutput } from '../fixtures/processes.js';
import { waitFor } from '../fixtures/wait.js';
import type { RunObject } from '@agentq/shared/core';

// A model endpoint over HTTPS, as every provider is: the agent-worker's HTTP client
// (node:http, model-http.ts) speaks TLS to it, trusting its certificate through
// NODE_EXTRA_CA_CERTS as the platform's fetch would.

let dir: string;
let caFile: string;
let llm: ScriptedLlm;
let front: https.Server;
let frontUrl: string;
let tlsRequests = 0;
let env: Record<string, string>;
const services = serviceGroup(() => env);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentq-model-https-'));
  llm = await startScriptedLlm({ handler: () => ({ content: 'answered over TLS' }) });
  const pems = await certificateFor127();
  caFile = join(dir, 'model.pem');
  writeFileSync(caFile, pems.cert);
  // An HTTPS front for the scripted model: each request passed on as it is.
  const target = new URL(llm.baseURL);
  front = https.createServer({ key: pems.key, cert: pems.cert }, (req, res) => {
    tlsRequests++;
    const upstream = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  frontUrl = `https://127.0.0.1:${(front.address() as AddressInfo).port}/v1`;
  env = {
    REDIS_URL: inject('redisUrl'),
    QUEUE_PREFIX: `mtls${Math.random().toString(36).slice(2, 8)}`,
    PORT: String(await freePort()),
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: frontUrl,
    OPENAI_API_KEY: 'test',
    MODEL: 'scripted',
    NODE_EXTRA_CA_CERTS: caFile,
    LOG_LEVEL: 'info',
    ...(inject('redisUrl').startsWith('redis+cluster:') ? { CELLS: '3' } : {}),
  };
});

afterAll(async () => {
  await services.stopAll();
  front?.closeAllConnections();
  await new Promise((r) => front?.close(r));
  await llm?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a model endpoint over HTTPS', () => {
  it('with its certificate trusted through NODE_EXTRA_CA_CERTS, a run completes over node:http', async () => {
    await services.start('api');
    const worker = await services.start('agent-worker');
    const base = `http://127.0.0.1:${env.PORT}`;
    const res = await fetch(`${base}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'hello' }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    const run = await waitFor(
      async () => {
        const r = (await (await fetch(`${base}/v1/runs/${id}`)).json()) as RunObject;
        return ['completed', 'failed', 'cancelled', 'incomplete'].includes(r.status) ? r : null;
      },
      { what: `run ${id} to end`, timeoutMs: 20_000, intervalMs: 50 },
    );
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(run.output?.content).toBe('answered over TLS');
    expect(tlsRequests).toBeGreaterThan(0);
    expect(worker.output.some((l) => /certificate/i.test(l))).toBe(false);
  }, 60_000);

  it('with its certificate not trusted, each attempt of the step says why: the certificate', async () => {
    const { NODE_EXTRA_CA_CERTS: _trusted, ...untrusted } = env;
    env = {
      ...untrusted,
      QUEUE_PREFIX: `mtls${Math.random().toString(36).slice(2, 8)}`,
      PORT: String(await freePort()),
    };
    await services.start('api');
    const worker = await services.start('agent-worker');
    const res = await fetch(`http://127.0.0.1:${env.PORT}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'hello' }),
    });
    expect(res.status).toBe(202);
    await waitForOutput(worker, /model endpoint unreachable: Connection error\. \(self[- ]signed certificate/);
  }, 60_000);
});

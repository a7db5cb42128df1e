#!/usr/bin/env node
// @ts-check
// `npm run bench:agents`: what naming a saved agent adds to `POST /v1/runs`: the request's latency,
// one at a time, for a run that names no agent, one that names an agent (its definition read and
// merged: one Redis read), and one whose agent may start two saved agents as sub-agents (their
// versions fixed: one Redis round trip more). The API is the built service on a Redis of its own
// (loopback; nothing consumes the runs: no worker runs). The three kinds of request alternate, so
// that drift of the machine's speed weighs on each alike. Env: BENCH_QUICK=1 (fewer requests).
import http from 'node:http';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnProc, stopProc } from './lib/procs.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { fmt, summary, textTable } from './lib/stats.mjs';
import { ROOT } from './lib/workload.mjs';
import { freePort, serviceNodeOptions } from '../scripts/lib/services.mjs';

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const N = QUICK ? 300 : 2000;
const WARM = QUICK ? 200 : 1000;

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
/**
 * One request; resolves when it answers the status expected.
 * @param {string} url
 * @param {string} method
 * @param {string} path
 * @param {string} body
 * @param {number[]} expected
 * @returns {Promise<void>}
 */
function send(url, method, path, body, expected) {
  return new Promise((done, fail) => {
    const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    const req = http.request(`${url}${path}`, { method, agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () =>
        expected.includes(res.statusCode ?? 0)
          ? done()
          : fail(new Error(`${method} ${path} → ${res.statusCode}: ${text.slice(0, 200)}`)),
      );
    });
    req.on('error', fail);
    req.end(body);
  });
}

// An agent of a usual size: a page of instructions, tools, settings and budgets.
const instructions = 'You are a careful analyst of CRM exports. '.repeat(50);
const definition = {
  description: 'Reads a CRM export and answers questions about it.',
  instructions,
  model: 'bench',
  model_settings: { temperature: 0.2, max_tokens: 800 },
  tools: ['crm__*'],
  max_depth: 8,
  metadata: { team: 'data' },
};
const KINDS = [
  { name: 'no agent', body: JSON.stringify({ input: 'benchmark', model: 'bench', instructions, max_depth: 8 }) },
  { name: '"agent": "analyst"', body: JSON.stringify({ agent: 'analyst', input: 'benchmark' }) },
  { name: '"agent": "lead" (2 sub-agent types)', body: JSON.stringify({ agent: 'lead', input: 'benchmark' }) },
];

const redis = await startRedis();
const tenants = join(tmpdir(), `agentq-bench-agents-${process.pid}.json`);
writeFileSync(
  tenants,
  JSON.stringify({ default: { max_active_runs: 1_000_000, max_queued_runs: 10_000_000, requests_per_minute: 1e7 } }),
);
const port = await freePort();
const api = spawnProc('api', process.execPath, [join(ROOT, 'services/api/dist/main.js')], {
  env: {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? '/tmp',
    REDIS_URL: redis.url,
    QUEUE_PREFIX: 'bench-agents',
    PORT: String(port),
    HOST: '127.0.0.1',
    MODEL: 'bench',
    TENANTS_CONFIG: tenants,
    LOG_LEVEL: 'error',
    NODE_OPTIONS: serviceNodeOptions(''),
  },
});
const url = `http://127.0.0.1:${port}`;
try {
  for (
    let i = 0;
    !(await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 300 || !api.running) throw new Error(`the API did not start:\n${api.tail.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const [name, def] of [
    ['analyst', definition],
    ['summarizer', { ...definition, description: 'Writes short summaries.' }],
    ['lead', { ...definition, subagents: { enabled: true, agents: ['analyst', 'summarizer'] } }],
  ])
    await send(url, 'PUT', `/v1/agents/${name}`, JSON.stringify(def), [200, 201]);
  for (let i = 0; i < WARM; i++) for (const k of KINDS) await send(url, 'POST', '/v1/runs', k.body, [202]);
  /** @type {number[][]} */
  const times = KINDS.map(() => []);
  for (let i = 0; i < N; i++) {
    for (const [j, k] of KINDS.entries()) {
      const t0 = performance.now();
      await send(url, 'POST', '/v1/runs', k.body, [202]);
      times[j].push(performance.now() - t0);
    }
  }
  const base = summary(times[0]);
  const rows = KINDS.map((k, j) => {
    const s = summary(times[j]);
    return [k.name, fmt(s.p50), fmt(s.p90), fmt(s.p99), j === 0 ? '–' : `+${fmt((s.p50 - base.p50) * 1000)} µs`];
  });
  process.stdout.write(
    `\n${textTable(['POST /v1/runs', 'p50 ms', 'p90 ms', 'p99 ms', 'p50 vs no agent'], rows)}\n` +
      `\n${N} requests of each kind, one at a time, alternating, after ${WARM} of each to warm up.\n`,
  );
} finally {
  agent.destroy();
  await stopProc(api);
  rmSync(tenants, { force: true });
  await redis.stop();
}

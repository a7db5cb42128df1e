#!/usr/bin/env node
// `npm run bench:api`: what accepting a run costs the API, `POST /v1/runs` with the benchmark's run
// (3 rounds of tool calls; nothing consumes it here: no worker runs). The API is the built service
// with the heap flags it ships with, on a Redis of the benchmark's own (loopback; everything
// stops by itself), fed 64 requests at a time over kept-alive connections (scenarios 2 and 3
// submit so). Beside it, the floor: a bare node:http server that reads and parses the same body
// and answers 202 (bench/lib/http-floor.mjs). The systems alternate window by window, each window
// 3,000 requests after a warm-up, and the lowest CPU per request of each is kept (other processes
// only ever add to it); the API's CPU and Redis's are per request.
// Env: BENCH_COMPARE=<path of another built checkout> (its API too, alternated with this one's),
// BENCH_QUICK=1 (fewer requests).
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { cpuMs, firstJsonLine, spawnProc, stopProc } from './lib/procs.mjs';
import { startRedis } from './lib/redis-server.mjs';
import { fmt, pool, textTable } from './lib/stats.mjs';
import { ROOT } from './lib/workload.mjs';
import { freePort, serviceNodeOptions } from '../scripts/lib/services.mjs';

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const PER_WINDOW = QUICK ? 500 : 3000;
const WINDOWS = QUICK ? 1 : 3;
const IN_FLIGHT = 64;
const COMPARE = process.env.BENCH_COMPARE ? resolve(process.env.BENCH_COMPARE) : null;
const say = (s) => process.stderr.write(`${s}\n`);

const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
const body = JSON.stringify({ input: 'benchmark', model: 'bench', max_depth: 10 });
function post(url) {
  return new Promise((done, fail) => {
    const req = http.request(`${url}/v1/runs`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 202 ? done() : fail(new Error(`POST ${url}/v1/runs → ${res.statusCode}`))));
    });
    req.on('error', fail);
    req.end(body);
  });
}

async function startApi(root, redisUrl, tag) {
  const tenants = join(tmpdir(), `agentq-bench-api-${process.pid}-${tag}.json`);
  writeFileSync(tenants, JSON.stringify({ default: { max_active_runs: 1_000_000, max_queued_runs: 10_000_000, requests_per_minute: 10_000_000 } }));
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? '/tmp',
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: `bench-api-${tag}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
    OPENAI_API_KEY: 'bench',
    MODEL: 'bench',
    TENANTS_CONFIG: tenants,
    LOG_LEVEL: 'error',
    NODE_OPTIONS: serviceNodeOptions(''),
  };
  const proc = spawnProc(`api (${tag})`, process.execPath, [join(root, 'services/api/dist/main.js')], { env });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    const ready = await fetch(`${url}/readyz`).then((r) => r.ok, () => false);
    if (ready) break;
    if (i > 300 || !proc.running) throw new Error(`the API of ${root} did not start:\n${proc.tail.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name: tag, url, proc };
}

async function window(system, redisPid, n) {
  const s0 = cpuMs(system.proc.pid);
  const r0 = cpuMs(redisPid);
  const t0 = performance.now();
  await pool(n, IN_FLIGHT, () => post(system.url));
  return { wallMs: performance.now() - t0, cpuUs: ((cpuMs(system.proc.pid) - s0) * 1000) / n, redisUs: ((cpuMs(redisPid) - r0) * 1000) / n };
}

const redis = await startRedis();
const systems = [];
try {
  const floor = spawnProc('http floor', process.execPath, [join(ROOT, 'bench/lib/http-floor.mjs')]);
  systems.push({ name: 'http floor', url: (await firstJsonLine(floor)).url, proc: floor });
  systems.push(await startApi(ROOT, redis.url, 'this'));
  if (COMPARE) systems.push(await startApi(COMPARE, redis.url, 'other'));
  // Warm-up: the first thousand requests of a fresh process run slower (JIT, heap growth).
  for (const s of systems) await pool(QUICK ? 300 : 1500, IN_FLIGHT, () => post(s.url));
  const runs = Object.fromEntries(systems.map((s) => [s.name, []]));
  for (let w = 0; w < WINDOWS; w++) {
    // A rotating order, so that drift of the machine's speed weighs on each alike.
    const order = systems.map((_, i) => systems[(i + w) % systems.length]);
    for (const s of order) {
      const r = await window(s, redis.pid, PER_WINDOW);
      say(`  ${s.name}: ${PER_WINDOW} requests in ${fmt(r.wallMs / 1000)} s, ${fmt(r.cpuUs)} µs of its CPU a request${s.name === 'http floor' ? '' : `, Redis ${fmt(r.redisUs)} µs`}`);
      runs[s.name].push(r);
    }
  }
  const best = (name) => runs[name].reduce((a, b) => (b.cpuUs < a.cpuUs ? b : a));
  const base = best('http floor');
  const rows = systems.map((s) => {
    const b = best(s.name);
    return [s.name === 'this' ? 'agentq API (this checkout)' : s.name === 'other' ? `agentq API (${COMPARE})` : 'bare node:http, parse, 202', fmt(b.cpuUs), `${fmt(b.cpuUs / base.cpuUs, 2)}×`, s.name === 'http floor' ? '–' : fmt(b.redisUs), fmt((PER_WINDOW * 1000) / b.wallMs)];
  });
  process.stdout.write(
    `\n${textTable(['server', 'CPU µs a request', 'vs the floor', 'Redis CPU µs a request', 'requests/s'], rows)}\n` +
      `\nPOST /v1/runs, ${IN_FLIGHT} in flight, kept-alive connections; the lowest CPU a request of ${WINDOWS} window(s) of ${PER_WINDOW} each (requests/s from that window).\n`,
  );
} finally {
  agent.destroy();
  for (const s of systems) await stopProc(s.proc);
  await redis.stop();
}

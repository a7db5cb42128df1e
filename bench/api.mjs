#!/usr/bin/env node
// @ts-check
// `npm run bench:api`: what the API's two busiest requests cost it: accepting a run (`POST /v1/runs`
// with the benchmark's run; nothing consumes it here: no worker runs) and polling one (`GET
// /v1/runs/:id` of a run made before). The API is the built service with the heap flags it ships
// with, on a Redis of the benchmark's own (loopback; everything stops by itself), fed 64 requests
// at a time over kept-alive connections (scenarios 2 and 3 submit so). Beside it, the floor: a
// bare node:http server that answers the same requests with a small JSON object, parsing a POST's
// body (bench/lib/http-floor.mjs). The systems alternate window by window, each window 3,000
// requests after a warm-up, and the lowest CPU per request of each is kept (other processes only
// ever add to it); the API process's CPU (/proc) and Redis's (INFO cpu) are per request.
// Env: BENCH_COMPARE=<path of another built checkout> (its API too, alternated with this one's),
// BENCH_QUICK=1 (fewer requests).
import http from 'node:http';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
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
/**
 * A server under measurement: the floor or an agentq API; `tenants` is the limits file written for an API.
 * @typedef {{ name: string, url: string, proc: import('./lib/types.d.ts').Spawned, tenants?: string, runId?: string }} Server
 * @typedef {{ wallMs: number, cpuUs: number, redisUs: number }} Measured
 */

const say = (/** @type {string} */ s) => process.stderr.write(`${s}\n`);

const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
const runBody = JSON.stringify({ input: 'benchmark', model: 'bench', max_depth: 10 });
/**
 * One request; resolves with its JSON answer when the status is the one expected.
 * @param {string} url
 * @param {string} method
 * @param {string} path
 * @param {string | undefined} body
 * @param {number} expected
 * @returns {Promise<string>}
 */
function request(url, method, path, body, expected) {
  return new Promise((done, fail) => {
    const headers = body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {};
    const req = http.request(`${url}${path}`, { method, agent, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () =>
        res.statusCode === expected
          ? done(text)
          : fail(new Error(`${method} ${url}${path} → ${res.statusCode}: ${text.slice(0, 200)}`)),
      );
    });
    req.on('error', fail);
    req.end(body);
  });
}
/** @type {Array<{ name: string, send: (s: Server) => Promise<string> }>} */
const CASES = [
  { name: 'POST /v1/runs', send: (s) => request(s.url, 'POST', '/v1/runs', runBody, 202) },
  { name: 'GET /v1/runs/:id', send: (s) => request(s.url, 'GET', `/v1/runs/${s.runId}`, undefined, 200) },
];

/**
 * @param {string} root the checkout whose built API runs
 * @param {string} redisUrl
 * @param {string} tag
 * @returns {Promise<Server>}
 */
async function startApi(root, redisUrl, tag) {
  const tenants = join(tmpdir(), `agentq-bench-api-${process.pid}-${tag}.json`);
  writeFileSync(
    tenants,
    JSON.stringify({
      default: { max_active_runs: 1_000_000, max_queued_runs: 10_000_000, requests_per_minute: 10_000_000 },
    }),
  );
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
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (i > 300 || !proc.running) throw new Error(`the API of ${root} did not start:\n${proc.tail.join('\n')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name: tag, url, proc, tenants };
}

/** Redis's CPU so far (ms), from INFO: µs resolution, where /proc counts 10 ms ticks (a window's Redis time is tens of ms). */
/** @param {Redis} ctl */
async function redisCpuMs(ctl) {
  const info = await ctl.info('cpu');
  const field = (/** @type {string} */ name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

/**
 * @param {Server} system
 * @param {Redis} ctl
 * @param {number} n
 * @param {(s: Server) => Promise<string>} send
 * @returns {Promise<Measured>}
 */
async function window(system, ctl, n, send) {
  const s0 = cpuMs(system.proc.pid) ?? NaN;
  const r0 = await redisCpuMs(ctl);
  const t0 = performance.now();
  await pool(n, IN_FLIGHT, () => send(system));
  const wallMs = performance.now() - t0;
  return {
    wallMs,
    cpuUs: (((cpuMs(system.proc.pid) ?? NaN) - s0) * 1000) / n,
    redisUs: (((await redisCpuMs(ctl)) - r0) * 1000) / n,
  };
}

const redis = await startRedis();
const ctl = new Redis(redis.url, { connectionName: 'bench-api-ctl' });
/** @type {Server[]} */
const systems = [];
try {
  const floor = spawnProc('http floor', process.execPath, [join(ROOT, 'bench/lib/http-floor.mjs')]);
  systems.push({ name: 'http floor', url: (await firstJsonLine(floor)).url, proc: floor });
  systems.push(await startApi(ROOT, redis.url, 'this'));
  if (COMPARE) systems.push(await startApi(COMPARE, redis.url, 'other'));
  // A run of each API for the GETs to read (the floor answers any id).
  for (const s of systems) s.runId = JSON.parse(await CASES[0].send(s)).id;
  const rows = [];
  for (const c of CASES) {
    // Warm-up: the first thousand requests of a fresh process run slower (JIT, heap growth).
    for (const s of systems) await pool(QUICK ? 300 : 1500, IN_FLIGHT, () => c.send(s));
    /** @type {Record<string, Measured[]>} */
    const runs = Object.fromEntries(systems.map((s) => [s.name, []]));
    for (let w = 0; w < WINDOWS; w++) {
      // A rotating order, so that drift of the machine's speed weighs on each alike.
      const order = systems.map((_, i) => systems[(i + w) % systems.length]);
      for (const s of order) {
        const r = await window(s, ctl, PER_WINDOW, c.send);
        say(
          `  ${c.name}, ${s.name}: ${PER_WINDOW} requests in ${fmt(r.wallMs / 1000)} s, ${fmt(r.cpuUs)} µs of its CPU a request${s.name === 'http floor' ? '' : `, Redis ${fmt(r.redisUs)} µs`}`,
        );
        runs[s.name].push(r);
      }
    }
    const best = (/** @type {string} */ name) => runs[name].reduce((a, b) => (b.cpuUs < a.cpuUs ? b : a));
    const base = best('http floor');
    for (const s of systems) {
      const b = best(s.name);
      const who =
        s.name === 'this'
          ? 'agentq API (this checkout)'
          : s.name === 'other'
            ? `agentq API (${COMPARE})`
            : 'bare node:http';
      rows.push([
        c.name,
        who,
        fmt(b.cpuUs),
        `${fmt(b.cpuUs / base.cpuUs, 2)}×`,
        s.name === 'http floor' ? '–' : fmt(b.redisUs),
        fmt((PER_WINDOW * 1000) / b.wallMs),
      ]);
    }
  }
  process.stdout.write(
    `\n${textTable(['request', 'server', 'CPU µs a request', 'vs the floor', 'Redis CPU µs a request', 'requests/s'], rows)}\n` +
      `\n${IN_FLIGHT} requests in flight, kept-alive connections; the lowest CPU a request of ${WINDOWS} window(s) of ${PER_WINDOW} each (requests/s from that window).\n`,
  );
} finally {
  agent.destroy();
  ctl.disconnect();
  for (const s of systems) {
    await stopProc(s.proc);
    if (s.tenants) rmSync(s.tenants, { force: true });
  }
  await redis.stop();
}

#!/usr/bin/env node
// `npm run bench:model-call`: what one streamed model call costs the agent-worker's process, with
// its HTTP client, `node` (model-http.ts), and with the baseline it was chosen over, `fetch` (the
// platform's fetch, the openai SDK's default). Each measurement is a process of
// its own with the heap flags the services ship with, against the benchmark's scripted model
// (loopback; everything stops by itself): one call at a time with an instant model, and 1,000
// calls in flight with a 500 ms model (the agent-worker's lot in scenario 3). The clients
// alternate (fetch, node, node, fetch) and the better of each pair is kept; CPU is the calling
// process's own, per call. Env: BENCH_QUICK=1 (fewer calls).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fmt, textTable } from './lib/stats.mjs';
import { ROOT } from './lib/workload.mjs';
import { HEAP_FLAGS } from '../scripts/lib/services.mjs';

const QUICK = /^(1|true|yes)$/i.test(process.env.BENCH_QUICK ?? '');
const CASES = [
  { name: 'one at a time, instant model', model: 'bench', inFlight: 1, calls: QUICK ? 300 : 3000 },
  { name: '1,000 in flight, 500 ms model', model: 'bench-500ms', inFlight: 1000, calls: QUICK ? 2000 : 6000 },
];
const ORDER = ['fetch', 'node', 'node', 'fetch'];

function output(proc) {
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => (out += d));
    proc.on('error', reject);
    proc.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${proc.spawnargs.join(' ')} exited ${code}`)),
    );
  });
}

const model = spawn(process.execPath, [join(ROOT, 'bench/llm-server.mjs')], {
  env: { ...process.env, LATENCY_MS: '0', ROUNDS: '1', FANOUT: '3' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
try {
  const { baseURL } = await new Promise((resolve, reject) => {
    model.stdout.once('data', (d) => resolve(JSON.parse(String(d))));
    model.once('exit', (code) => reject(new Error(`the scripted model exited ${code}`)));
  });
  const rows = [];
  for (const c of CASES) {
    const best = {};
    for (const client of ORDER) {
      const child = spawn(
        process.execPath,
        [
          ...HEAP_FLAGS.split(' '),
          join(ROOT, 'bench/lib/model-calls.mjs'),
          baseURL,
          c.model,
          client,
          String(c.inFlight),
          String(c.calls),
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const r = JSON.parse(await output(child));
      process.stderr.write(
        `  ${c.name}, ${client}: ${fmt(r.cpuUsPerCall)} µs a call, ${fmt(r.wallMs / 1000)} s, peak ${fmt(r.peakRssMB)} MB\n`,
      );
      if (!best[client] || r.cpuUsPerCall < best[client].cpuUsPerCall)
        best[client] = { ...r, peakRssMB: Math.max(r.peakRssMB, best[client]?.peakRssMB ?? 0) };
    }
    const [f, n] = [best.fetch, best.node];
    rows.push([
      c.name,
      fmt(f.cpuUsPerCall),
      fmt(n.cpuUsPerCall),
      `${fmt(n.cpuUsPerCall / f.cpuUsPerCall, 2)}×`,
      fmt(f.wallMs / 1000),
      fmt(n.wallMs / 1000),
      fmt(f.peakRssMB),
      fmt(n.peakRssMB),
    ]);
  }
  process.stdout.write(
    `\n${textTable(['calls', 'fetch µs/call', 'node µs/call', 'node/fetch', 'fetch s', 'node s', 'fetch peak MB', 'node peak MB'], rows)}\n` +
      `\nCPU of the calling process per streamed call (the better of two runs each); wall time of all calls; peak RSS (the higher of the two).\n`,
  );
} finally {
  model.kill();
}

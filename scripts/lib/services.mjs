// Helpers shared by scripts/start.mjs, the demo (lib/demo-stack.mjs) and the benchmark: find
// the built services, spawn them as child processes with prefixed output, stop them cleanly.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The three services, in the order they are started. */
export const SERVICES = ['api', 'agent-worker', 'tool-worker'];

/** The built entry point of a service. */
export const serviceEntry = (name) => join(ROOT, 'services', name, 'dist', 'main.js');

/** Built files that are missing (relative to the repo root); empty when `npm run build` has run. */
export function missingBuilds(extra = []) {
  return [...SERVICES.map(serviceEntry), ...extra].filter((p) => !existsSync(p)).map((p) => relative(ROOT, p));
}

/** A free TCP port on `host`, from the OS. */
export function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const COLORS = { api: 36, 'agent-worker': 35, 'tool-worker': 33 };
const WIDTH = Math.max(...SERVICES.map((s) => s.length));

/** `name | ` padded to line up, coloured when `tty`. */
export function linePrefix(name, tty = process.stdout.isTTY) {
  const label = `${name.padEnd(WIDTH)} |`;
  return tty ? `\x1b[${COLORS[name] ?? 90}m${label}\x1b[0m ` : `${label} `;
}

/** Calls `onLine` for every complete line of a stream (and the unterminated tail at its end). */
function eachLine(stream, onLine) {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      onLine(buf.slice(0, nl).replace(/\r$/, ''));
      buf = buf.slice(nl + 1);
    }
  });
  stream.on('end', () => {
    if (buf) onLine(buf);
    buf = '';
  });
}

/**
 * V8 heap sizing the services run with unless NODE_OPTIONS already sizes the heap (the
 * Dockerfile sets the same). With V8's defaults an agent-worker holding 1,000 model streams
 * peaked at ≈ 520–560 MB RSS of which ≈ 40 MB was live: garbage promoted out of a large young
 * generation and collected late. A 384 MB old-space cap with a 32 MB semi-space keeps it at
 * ≈ 250–265 MB (either flag alone left it at 340–420 MB). The semi-space was 8 MB until the
 * agent-worker's model calls went over node:http (model-http.ts), which holds less per call in
 * flight: 32 MB then peaks as 8 MB did before and saves ≈ 12 % of the agent-worker's CPU under
 * load (bench/findings.md, item 12). The price against V8's defaults is more frequent GC.
 * Raise the cap if AGENT_CONCURRENCY × transcript size needs more live heap.
 */
export const HEAP_FLAGS = '--max-semi-space-size=32 --max-old-space-size=384';

/** NODE_OPTIONS for a service: `current`, plus HEAP_FLAGS unless `current` sizes the heap itself. */
export function serviceNodeOptions(current = '') {
  if (/--max-(old|semi)-space-size/.test(current)) return current;
  return [current, HEAP_FLAGS].filter(Boolean).join(' ');
}

/**
 * Spawns `node services/<name>/dist/main.js` with `env` (NODE_OPTIONS completed by
 * serviceNodeOptions). The child gets its own process group
 * (so a terminal's Ctrl-C reaches it only through us, exactly once, and its MCP servers can be
 * killed with it). `onLine(line, stream)` receives each output line.
 *
 * Returns `{ name, child, exited, running }` where `exited` resolves to `{ code, signal }`.
 */
export function startService(name, { env, onLine }) {
  const child = spawn(process.execPath, [serviceEntry(name)], {
    cwd: ROOT,
    env: { ...env, NODE_OPTIONS: serviceNodeOptions(env.NODE_OPTIONS) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const svc = { name, child, running: true, code: null, signal: null };
  // 'close' (not 'exit') so the last output lines are delivered before we report the exit.
  svc.exited = new Promise((resolve) => {
    child.once('error', (err) => {
      onLine(`failed to start: ${err.message}`, 'stderr');
      svc.running = false;
      svc.code = 127;
      resolve({ code: 127, signal: null });
    });
    child.once('close', (code, signal) => {
      svc.running = false;
      svc.code = code;
      svc.signal = signal;
      resolve({ code, signal });
    });
  });
  eachLine(child.stdout, (line) => onLine(line, 'stdout'));
  eachLine(child.stderr, (line) => onLine(line, 'stderr'));
  return svc;
}

/** Sends `signal` to a service (to its process only: it shuts its own MCP servers down). */
export function signalService(svc, signal) {
  if (!svc.running || svc.child.exitCode !== null || svc.child.signalCode !== null) return;
  try {
    svc.child.kill(signal);
  } catch {
    // already gone
  }
}

/** SIGKILLs a service's whole process group (the service and anything it spawned). */
export function killServiceGroup(svc) {
  if (!svc.child.pid) return;
  try {
    process.kill(-svc.child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Stops services: `signal` to each still running, then waits up to `graceMs`; whatever is still
 * up after that is killed with its process group. Resolves when all have exited.
 */
export async function stopServices(services, { signal = 'SIGTERM', graceMs = 30_000 } = {}) {
  for (const svc of services) signalService(svc, signal);
  let timer;
  const timedOut = new Promise((resolve) => {
    timer = setTimeout(() => resolve(true), graceMs);
  });
  const done = await Promise.race([Promise.all(services.map((s) => s.exited)).then(() => false), timedOut]);
  clearTimeout(timer);
  if (done) {
    for (const svc of services) if (svc.running) killServiceGroup(svc);
    await Promise.all(services.map((s) => s.exited));
  }
}

/** Describes how a service exited: "exited with code 1" / "was killed by SIGKILL". */
export function describeExit({ code, signal }) {
  return signal ? `was killed by ${signal}` : `exited with code ${code}`;
}

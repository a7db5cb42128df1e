// @ts-check
// Child processes of the benchmark: spawn, watch, measure (/proc), and stop every one of them
// (by process group, by pid: never by name) whatever way the benchmark ends.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';

/** @import { Exit, Spawned } from './types.d.ts' */

/** @type {Set<Spawned>} */
const children = new Set();
/** @type {Set<string>} */
const tmpDirs = new Set();
let cleanupInstalled = false;

/**
 * A temporary directory removed when the benchmark exits, however it exits.
 * @param {string} dir
 */
export function tmpDir(dir) {
  installCleanup();
  tmpDirs.add(dir);
  return dir;
}

function installCleanup() {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  const killAll = () => {
    for (const p of children) {
      try {
        process.kill(-p.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
  };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  }
}

/**
 * Spawns `command args` in its own process group. Keeps the last lines of its output (shown
 * when it dies unexpectedly); `onLine` sees every stdout line.
 * @param {string} name
 * @param {string} command
 * @param {string[]} args
 * @param {{ env?: NodeJS.ProcessEnv, onLine?: (line: string) => void }} options
 * @returns {Spawned}
 */
export function spawnProc(name, command, args, { env = process.env, onLine } = {}) {
  installCleanup();
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  /** @type {(exit: Exit) => void} */
  let exit = () => {};
  /** @type {Spawned} */
  const p = {
    name,
    child,
    // NaN when the spawn failed: process.kill refuses it, where 0 or -1 would signal other processes.
    pid: child.pid ?? NaN,
    tail: [],
    running: true,
    stopping: false,
    listeners: new Set(),
    exited: new Promise((resolve) => {
      exit = resolve;
    }),
  };
  if (onLine) p.listeners.add(onLine);
  children.add(p);
  const keep = (/** @type {string} */ line) => {
    p.tail.push(line);
    if (p.tail.length > 30) p.tail.shift();
  };
  createInterface({ input: child.stdout }).on('line', (line) => {
    keep(line);
    for (const l of p.listeners) l(line);
  });
  createInterface({ input: child.stderr }).on('line', keep);
  child.once('error', (err) => {
    keep(`spawn failed: ${err.message}`);
    p.running = false;
    children.delete(p);
    exit({ code: 127 });
  });
  child.once('close', (code, signal) => {
    p.running = false;
    children.delete(p);
    if (!p.stopping)
      process.stderr.write(
        `bench: ${name} (pid ${p.pid}) exited unexpectedly (${signal ?? code}):\n  ${p.tail.slice(-10).join('\n  ')}\n`,
      );
    exit({ code, signal });
  });
  return p;
}

/**
 * Waits for the first stdout line that parses as JSON (a child announcing its address).
 * @param {Spawned} p
 * @returns {Promise<any>}
 */
export function firstJsonLine(p, timeoutMs = 15_000) {
  const parse = (/** @type {string} */ line) => {
    try {
      return JSON.parse(line);
    } catch {
      return undefined;
    }
  };
  return new Promise((resolve, reject) => {
    const seen = p.tail.map(parse).find((v) => v !== undefined);
    if (seen !== undefined) return resolve(seen);
    const timer = setTimeout(
      () => reject(new Error(`${p.name} did not start within ${timeoutMs} ms:\n${p.tail.join('\n')}`)),
      timeoutMs,
    );
    const listener = (/** @type {string} */ line) => {
      const v = parse(line);
      if (v === undefined) return;
      clearTimeout(timer);
      p.listeners.delete(listener);
      resolve(v);
    };
    p.listeners.add(listener);
    p.exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${p.name} exited before it started:\n${p.tail.join('\n')}`));
    });
  });
}

/**
 * SIGTERM, then SIGKILL of the group after `graceMs`.
 * @param {Spawned | null | undefined} p
 */
export async function stopProc(p, graceMs = 10_000) {
  if (!p?.running) return;
  p.stopping = true;
  try {
    process.kill(p.pid, 'SIGTERM');
  } catch {
    // gone
  }
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const timedOut = await Promise.race([
    p.exited.then(() => false),
    new Promise((r) => {
      timer = setTimeout(() => r(true), graceMs);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    try {
      process.kill(-p.pid, 'SIGKILL');
    } catch {
      // gone
    }
    await p.exited;
  }
  // Anything the process left in its group (e.g. a stdio MCP server) goes too.
  try {
    process.kill(-p.pid, 'SIGKILL');
  } catch {
    // none left
  }
}

const CLK_TCK = 100;

/**
 * CPU time (user + system) a process has used, in ms; null when it is gone.
 * @param {number} pid
 */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

/**
 * Peak and current resident memory of a process, in MB (VmHWM, VmRSS).
 * @param {number} pid
 */
export function memMB(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (/** @type {string} */ k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
    return { peak: kb('VmHWM') / 1024, rss: kb('VmRSS') / 1024 };
  } catch {
    return null;
  }
}

/**
 * The direct children of a process (e.g. the stdio MCP server a tool-worker spawned).
 * @param {number} pid
 */
export function childPids(pid) {
  /** @type {number[]} */
  const out = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const list = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim();
      if (list) out.push(...list.split(/\s+/).map(Number));
    }
  } catch {
    // gone
  }
  return out;
}

export const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/**
 * An error's message, whatever was thrown.
 * @param {unknown} err
 */
export const messageOf = (err) => (err instanceof Error ? err.message : String(err));

/**
 * Polls `fn` until it resolves truthy (a throw counts as not yet), or fails after `timeoutMs`: a child or a service coming up.
 * @param {string} what
 * @param {() => unknown} fn
 */
export const until = async (what, fn, timeoutMs = 20_000, everyMs = 50) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await fn()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
};

/** CPU time the whole machine has been busy (all cores, not idle nor iowait), in ms. */
export function machineBusyMs() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = line;
  return ((user + nice + system + irq + softirq + (steal ?? 0)) * 1000) / CLK_TCK;
}

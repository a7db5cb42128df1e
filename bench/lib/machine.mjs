// @ts-check
// What the benchmark's processes use of the machine (CPU, memory), and how much of it other
// processes take: the numbers are judged by that on a shared machine.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { cpuMs, machineBusyMs, memMB, sleep } from './procs.mjs';

/** @import { CpuSnapshot, Proc } from './types.d.ts' */

/**
 * CPU ms so far of each process (and of this one), keyed by name; `machine` is the whole
 * machine's busy time, so that a window can tell how much CPU went to processes not ours.
 * @param {Proc[]} processes
 * @param {Proc[]} extra
 * @returns {CpuSnapshot}
 */
export function cpuSnapshot(processes, extra = []) {
  /** @type {CpuSnapshot} */
  const out = {};
  Object.defineProperty(out, 'machine', { value: machineBusyMs(), enumerable: false });
  Object.defineProperty(out, 'at', { value: Date.now(), enumerable: false });
  for (const { name, pid } of [...processes, ...extra]) {
    const ms = cpuMs(pid);
    if (ms !== null) out[name] = (out[name] ?? 0) + ms;
  }
  const self = process.cpuUsage();
  out['bench (client)'] = (self.user + self.system) / 1000;
  return out;
}

/**
 * CPU ms each process used between two snapshots.
 * @param {CpuSnapshot} a
 * @param {CpuSnapshot} b
 */
export function cpuDelta(a, b) {
  /** @type {Record<string, number>} */
  const out = {};
  for (const k of Object.keys(b)) out[k] = b[k] - (a[k] ?? 0);
  return out;
}

/**
 * The share of the machine (0..1) that processes other than ours used between two snapshots.
 * @param {CpuSnapshot} a
 * @param {CpuSnapshot} b
 */
export function foreignShare(a, b) {
  const ours = Object.values(cpuDelta(a, b)).reduce((x, y) => x + y, 0);
  const wall = (b.at ?? 0) - (a.at ?? 0);
  if (wall <= 0) return 0;
  return Math.max(0, ((b.machine ?? 0) - (a.machine ?? 0) - ours) / (wall * os.availableParallelism()));
}

/**
 * Waits (up to `maxMs`) until the machine is quiet: other processes (builds, test suites of
 * people sharing it) using less than `threshold` of it over a second. Resolves with the share
 * seen last.
 * @param {Proc[]} ours
 */
export async function waitQuiet(ours = [], { threshold = 0.1, maxMs = 90_000 } = {}) {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const a = cpuSnapshot(ours);
    await sleep(1000);
    const share = foreignShare(a, cpuSnapshot(ours));
    if (share < threshold || Date.now() > deadline) return share;
  }
}

/**
 * Peak and current RSS of each process, MB (NaN where it is gone).
 * @param {Proc[]} processes
 * @returns {import('./types.d.ts').MemoryRow[]}
 */
export function memory(processes) {
  return processes.map(({ name, pid }) => ({ name, ...(memMB(pid) ?? { peak: NaN, rss: NaN }) }));
}

/**
 * One benchmark's watch on the others sharing the machine: `quiet(processes)` before each
 * measurement (those processes and `redisProc` count as ours), `noteForeign` after it; `log`
 * warns of a machine that was not quiet.
 * @param {(line: string) => void} log
 * @param {Proc[]} redisProc
 */
export function noiseWatch(log, redisProc) {
  /**
   * The share of the machine other processes used during each measurement, to judge the numbers by.
   * @type {Array<{ label: string, share: number }>}
   */
  const foreign = [];
  /** @type {(label: string, share: number) => void} */
  const noteForeign = (label, share) => {
    foreign.push({ label, share });
    if (share > 0.1)
      log(`  warning: other processes used ${(share * 100).toFixed(0)} % of the machine during "${label}"`);
  };
  // At most 30 s of waiting for a quiet machine before a measurement, 3 minutes in all.
  let quietBudgetMs = 180_000;
  const quiet = async (/** @type {Proc[]} */ processes = []) => {
    const t = Date.now();
    const share = await waitQuiet([...processes, ...redisProc], {
      maxMs: Math.max(0, Math.min(30_000, quietBudgetMs)),
    });
    quietBudgetMs -= Date.now() - t;
    if (share >= 0.1)
      log(
        `  (the machine did not go quiet: other processes use ${(share * 100).toFixed(0)} % of it; measuring anyway)`,
      );
  };
  return { foreign, noteForeign, quiet };
}

/**
 * A process's read and write system calls so far (/proc/<pid>/io), or null where unreadable.
 * @param {number | undefined} pid
 */
export function syscalls(pid) {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    return { reads: Number(/^syscr: (\d+)/m.exec(io)?.[1]), writes: Number(/^syscw: (\d+)/m.exec(io)?.[1]) };
  } catch {
    return null;
  }
}

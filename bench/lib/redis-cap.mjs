// @ts-check
// A CPU cap on the benchmark's Redis (a cgroup CPU quota), so that Redis, not the 2 cores the
// workers share, is what limits a system: how a Redis shard serving many worker hosts is loaded.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { messageOf } from './procs.mjs';

const V1 = '/sys/fs/cgroup/cpu';
const V2 = '/sys/fs/cgroup';
/** A short period, so that a capped Redis is paused for at most a few ms at a time. */
const PERIOD_US = 10_000;

/** Where a CPU quota can be set on this machine (cgroup v1's cpu controller or v2's), or null. */
function cgroupKind() {
  if (existsSync(join(V1, 'cpu.cfs_quota_us'))) return 'v1';
  try {
    if (readFileSync(join(V2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu')) return 'v2';
  } catch {}
  return null;
}

/**
 * Caps process `pid` at `share` of one core. Returns `release()`, which lifts the cap, or
 * throws with the reason it cannot be set here (no cgroup CPU controller, not root).
 * @param {number} pid
 * @param {number} share
 */
export function capCpu(pid, share) {
  const kind = cgroupKind();
  if (!kind) throw new Error('no cgroup CPU controller on this machine');
  const root = kind === 'v1' ? V1 : V2;
  const dir = join(root, `agentq-bench-${pid}`);
  const release = () => {
    try {
      writeFileSync(join(root, 'cgroup.procs'), String(pid));
    } catch {}
    try {
      rmdirSync(dir);
    } catch {}
  };
  try {
    mkdirSync(dir, { recursive: true });
    const quota = Math.max(1000, Math.round(PERIOD_US * share));
    if (kind === 'v1') {
      writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
      writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
    } else {
      writeFileSync(join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
    }
    // Every thread of the process (Redis's background threads too): cgroup.procs moves the whole process.
    writeFileSync(join(dir, 'cgroup.procs'), String(pid));
  } catch (err) {
    release();
    throw new Error(`cannot set a cgroup CPU quota here: ${messageOf(err)}`);
  }
  return { release };
}

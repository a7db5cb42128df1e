// What a system asks of Redis over a window of runs: the commands Redis executed (INFO
// commandstats) and what each process sent (the client probes, bench/lib/redis-probe.mjs).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from './procs.mjs';

/** `INFO commandstats` as { name: { calls, usec } }. */
export async function commandStats(redis) {
  const text = await redis.info('commandstats');
  const out = {};
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return out;
}

/** Signals every probed process to write its counters; resolves with them by pid. */
export async function readProbes(dir, pids) {
  const since = Date.now();
  for (const pid of pids) process.kill(pid, 'SIGUSR2');
  const out = {};
  await until('the Redis probes', async () => {
    for (const pid of pids) {
      const f = join(dir, `${pid}.json`);
      if (!existsSync(f)) return false;
      const v = JSON.parse(readFileSync(f, 'utf8'));
      if (v.at < since) return false;
      out[pid] = v;
    }
    return true;
  }, 10_000, 20);
  return out;
}

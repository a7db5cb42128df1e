// @ts-check
// The benchmark's Redis: a redis-server of its own (or BENCH_REDIS_URL's), and the clean-up that
// leaves a shared one as it was found.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { messageOf, spawnProc, stopProc, tmpDir, until } from './procs.mjs';
import { freePort } from '../../scripts/lib/services.mjs';

/**
 * Starts a redis-server of our own (AOF on, as in docker-compose.yml, unless BENCH_REDIS_AOF=no), or
 * uses BENCH_REDIS_URL. `under`: a command the server runs under (a profiler: its arguments, then
 * the server's command line), which also makes it ours whatever BENCH_REDIS_URL says; `dir` is
 * where the server (and that command) may write.
 * @param {{ under?: ((dir: string) => string[]) | null }} options
 * @returns {Promise<import('./types.d.ts').BenchRedis>}
 */
export async function startRedis({ under = null } = {}) {
  if (process.env.BENCH_REDIS_URL && !under) {
    return { url: process.env.BENCH_REDIS_URL, own: false, pid: null, dir: null, stop: async () => {} };
  }
  const port = await freePort();
  const dir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-redis-')));
  const server = [
    'redis-server',
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    process.env.BENCH_REDIS_AOF ?? 'yes',
    '--appendfsync',
    'everysec',
    '--maxmemory-policy',
    'noeviction',
    '--dir',
    dir,
    '--loglevel',
    'warning',
  ];
  const [command, ...args] = under ? [...under(dir), ...server] : server;
  const proc = spawnProc('redis-server', command, args);
  // BENCH_REDIS_CPU=1 (with the bench itself under `taskset -c 0`): Redis on a core of its own,
  // so that what a step costs it is not also what the other processes do to its caches.
  if (process.env.BENCH_REDIS_CPU)
    execFileSync('taskset', ['-pc', process.env.BENCH_REDIS_CPU, String(proc.pid)], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await until(
      'redis-server',
      async () => {
        if (!proc.running) throw new Error('gone');
        if (probe.status !== 'ready') await probe.connect();
        return (await probe.ping()) === 'PONG';
      },
      under ? 60_000 : 10_000,
    );
  } catch (err) {
    await stopProc(proc);
    throw new Error(
      `could not start redis-server (install redis-server, or set BENCH_REDIS_URL): ${proc.tail.join(' ')} ${messageOf(err)}`,
    );
  } finally {
    probe.disconnect();
  }
  return {
    url,
    own: true,
    pid: proc.pid,
    dir,
    async stop() {
      await stopProc(proc);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Deletes every key under a prefix (SCAN + UNLINK), so a shared Redis is left as it was.
 * @param {import('./types.d.ts').Client} redis
 * @param {string} prefix
 */
export async function deletePrefix(redis, prefix) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

// @ts-check
// A Redis Cluster of the benchmark's own: `masters` redis-server processes with cluster mode on,
// on free loopback ports, joined by `redis-cli --cluster create`, thrown away whole at stop.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { spawnProc, stopProc, tmpDir, until } from './procs.mjs';
import { freePort } from '../../scripts/lib/services.mjs';

/** @typedef {{ port: number, proc: import('./types.d.ts').Spawned, redis: Redis }} ClusterNode */

const run = promisify(execFile);

/** Starts the cluster; resolves with its agentq URL, its nodes (port, pid, a plain connection each) and stop(). */
export async function startRedisCluster({ masters = 3 } = {}) {
  const dir = tmpDir(mkdtempSync(join(tmpdir(), 'agentq-bench-cluster-')));
  /** @type {ClusterNode[]} */
  const nodes = [];
  try {
    for (let i = 0; i < masters; i++) {
      const port = await freePort();
      const proc = spawnProc(`redis-${i}`, 'redis-server', [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
        '--appenddirname',
        `aof-${port}`,
        '--dir',
        dir,
        '--loglevel',
        'warning',
      ]);
      const redis = new Redis(port, '127.0.0.1', {
        lazyConnect: true,
        maxRetriesPerRequest: 0,
        retryStrategy: () => 100,
      });
      redis.on('error', () => {});
      nodes.push({ port, proc, redis });
    }
    for (const n of nodes) {
      await until(
        `redis ${n.port}`,
        async () => {
          if (n.redis.status !== 'ready') await n.redis.connect().catch(() => {});
          return (await n.redis.ping().catch(() => '')) === 'PONG';
        },
        10_000,
      );
    }
    await run('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      '0',
      '--cluster-yes',
    ]);
    await until(
      'the cluster',
      async () => {
        for (const n of nodes) if (!/cluster_state:ok/.test(String(await n.redis.cluster('INFO')))) return false;
        return true;
      },
      20_000,
      100,
    );
  } catch (err) {
    await Promise.all(nodes.map((n) => stopProc(n.proc, 2000)));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    nodes: nodes.map((n) => ({ port: n.port, pid: n.proc.pid, redis: n.redis })),
    async stop() {
      for (const n of nodes) n.redis.disconnect();
      await Promise.all(nodes.map((n) => stopProc(n.proc, 5000)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

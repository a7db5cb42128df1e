// @ts-check
// Where the numbers come from: the machine, the software's versions and the commit measured.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { ROOT } from './workload.mjs';

const pkgVersion = (/** @type {string} */ name) => {
  try {
    return JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return '?';
  }
};

/**
 * The commit a checkout is at, and whether tracked files differ from it.
 * @param {string} root
 */
export function commitOf(root) {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: root,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${commit} (with uncommitted changes)` : commit;
  } catch {
    return '?';
  }
}

/**
 * The machine and software the numbers come from.
 * @param {import('ioredis').Redis} ctl
 * @param {import('./types.d.ts').BenchRedis} redis
 * @returns {Promise<import('./types.d.ts').MachineInfo>}
 */
export async function machineInfo(ctl, redis) {
  const cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? os.cpus()[0]?.model ?? '?';
  const server = await ctl.info('server');
  const commit = commitOf(ROOT);
  return {
    nproc: os.availableParallelism(),
    cpu,
    ramGiB: os.totalmem() / 2 ** 30,
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    redis: /redis_version:(\S+)/.exec(server)?.[1] ?? '?',
    redisSetup: redis.own
      ? 'own redis-server on a free loopback port, AOF on (appendfsync everysec), no RDB'
      : `external (${redis.url}), unique key prefix`,
    bullmq: pkgVersion('bullmq'),
    ioredis: pkgVersion('ioredis'),
    mcpSdk: pkgVersion('@modelcontextprotocol/sdk'),
    openai: pkgVersion('openai'),
    commit,
  };
}

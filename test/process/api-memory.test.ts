import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { startService, waitForOutput, type ServiceProcess } from '../fixtures/processes.js';
import { freePort } from '../fixtures/redis.js';

// Ten clients each POST a run with a 30 MB context (allowed: the limit is 32 MB) at once. The
// API holds at most MAX_BODIES_IN_FLIGHT_BYTES of bodies: the others get 503 with Retry-After
// without being held, and the process stays up with its memory bounded.

const prefix = `mem${randomBytes(4).toString('hex')}`;
let api: ServiceProcess | undefined;
afterAll(async () => {
  await api?.kill('SIGTERM');
  const redis = new Redis(inject('redisUrl'));
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const peakRssMb = (pid: number) =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

describe('many large bodies at once', () => {
  it('are let in a few at a time (503 + Retry-After for the rest): the API stays up, its peak RSS bounded', async () => {
    const port = await freePort();
    api = startService('api', {
      REDIS_URL: inject('redisUrl'),
      QUEUE_PREFIX: prefix,
      MODEL: 'm',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
    await waitForOutput(api, /api listening/);
    const body = JSON.stringify({ input: 'count the words', context: 'word '.repeat(6 * 1024 * 1024) });
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        fetch(`http://127.0.0.1:${port}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() })),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    console.info(`10 × 30 MB: ${statuses.join(' ')}; api peak RSS ${peakRssMb(api.child.pid!).toFixed(0)} MB`);
    expect(
      statuses.every((s) => s === 202 || s === 503),
      statuses.join(' '),
    ).toBe(true);
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThanOrEqual(1);
    for (const a of answers.filter((x) => x.status === 503)) expect(a.retryAfter).toBe('1');
    expect(api.child.exitCode).toBeNull();
    // One 30 MB body at a time peaks at ≈ 380 MB here; all ten at once, at ≈ 1,350 MB.
    expect(peakRssMb(api.child.pid!)).toBeLessThan(600);
  }, 120_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { spawnRedisServer, type SpawnedRedis } from '../fixtures/redis.js';
import { startStack, type Stack } from '../fixtures/services.js';
import { waitFor } from '../fixtures/wait.js';
import { errorOf } from '../fixtures/api-client.js';

const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const handler: Handler = (req) =>
  round(req) < 2
    ? { tool_calls: [{ name: 'crm__sleep', arguments: { ms: 300, label: 'r' } }], delayMs: 50 }
    : { content: 'survived' };

let redis: SpawnedRedis;
let restarted: SpawnedRedis | undefined;
let stack: Stack;
beforeAll(async () => {
  // A Redis of this test's own, with AOF on as in docker-compose, so it can be shut down.
  redis = await spawnRedisServer({ appendonly: true });
  stack = await startStack({ handler, redisUrl: redis.url, env: { JOB_LOCK_MS: '5000', STALLED_INTERVAL_MS: '1000' } });
});
afterAll(async () => {
  await stack?.close();
  // The server started again on the same port is a process of its own: stop it before the
  // first one's stop removes the directory they share.
  await restarted?.stop();
  await redis?.stop();
});

describe('Redis restart (AOF on)', () => {
  it('answers 503 while Redis is down, reconnects by itself, and completes every run accepted before and after', async () => {
    const before = await Promise.all(Array.from({ length: 10 }, () => stack.createRun({ input: 'survive a restart' })));
    // Redis goes away once every run is under way (its first model call made).
    await waitFor(() => stack.llm.requests.length >= before.length, { what: 'every run to have called the model' });

    const exited = new Promise((r) => redis.proc.once('exit', r));
    const admin = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    admin.on('error', () => {});
    void admin.call('SHUTDOWN').catch(() => {}); // no reply: Redis exits
    await exited;
    admin.disconnect();

    const ready = await stack.request('/readyz', { signal: AbortSignal.timeout(5000) });
    expect(ready.status).toBe(503);
    expect((await errorOf(ready)).code).toBe('service_unavailable');
    const refused = await stack.request('/v1/runs', {
      method: 'POST',
      json: { input: 'while down' },
      signal: AbortSignal.timeout(5000),
    });
    expect(refused.status).toBe(503);
    expect((await errorOf(refused)).code).toBe('service_unavailable');
    const read = await stack.request(`/v1/runs/${before[0].id}`, { signal: AbortSignal.timeout(5000) });
    expect(read.status).toBe(503);

    // Same port, same directory: Redis reloads its append-only file.
    restarted = await spawnRedisServer({ port: redis.port, dir: redis.dir, appendonly: true });
    await waitFor(async () => (await stack.request('/readyz')).status === 200, {
      what: '/readyz to answer 200 again',
      intervalMs: 100,
    });

    const after = await Promise.all(Array.from({ length: 5 }, () => stack.createRun({ input: 'after the restart' })));
    for (const r of [...before, ...after]) {
      const run = await stack.waitForRun(r.id, { timeoutMs: 30_000 });
      expect(run, r.id).toMatchObject({ status: 'completed', depth: 2, output: { content: 'survived' } });
      expect(run.usage.model_calls).toBe(3);
    }
  }, 60_000);
});

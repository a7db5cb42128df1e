import { afterAll, describe, expect, inject, it } from 'vitest';
import { Hono } from 'hono';
import { createRedis, type Redis } from '@agentq/shared/infra';
import { tenantTable, UsageMeter } from '@agentq/shared/runs';
import { requestLimit } from '../services/api/src/rate-limit.js';

// requests_per_minute across API processes: each process counts its own requests at once and
// adds them to the tenant's count in Redis in batches, learning the others' from the replies.

const redis = createRedis(inject('redisUrl'), { name: 'rate-limit-test' }) as Redis;
afterAll(() => redis.disconnect());

/** One API process's limit in front of a route that answers 200; `tenant` is the caller. */
function apiProcess(prefix: string, perMinute: number, connection: Redis = redis) {
  const app = new Hono<{ Variables: { tenant: string } }>();
  app.onError((err) => new Response(null, { status: (err as { status?: number }).status ?? 500 }));
  app.use('*', async (c, next) => {
    c.set('tenant', 'k');
    await next();
  });
  app.use(
    '*',
    requestLimit({
      usage: new UsageMeter(connection, prefix),
      tenants: tenantTable({ default: { requests_per_minute: perMinute }, keys: {} }),
    }),
  );
  app.get('/', (c) => c.body(null, 200));
  return async (n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await app.request('/')).status);
    return out;
  };
}

const settle = () => new Promise((r) => setTimeout(r, 100));
/** Counts are per minute: a test starts at least 2 s before the next one. */
async function awayFromMinuteEnd() {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 2_000) await new Promise((r) => setTimeout(r, left + 10));
}

describe('requests_per_minute', () => {
  it('a burst in one process stops at the limit exactly, before any count comes back from Redis', async () => {
    await awayFromMinuteEnd();
    const p = apiProcess(`rl-burst-${Date.now()}`, 5);
    expect(await p(7)).toEqual([200, 200, 200, 200, 200, 429, 429]);
  });

  it('a process whose counts cannot reach Redis still stops at the limit', async () => {
    await awayFromMinuteEnd();
    const gone = createRedis(inject('redisUrl'), { name: 'rate-limit-gone' }) as Redis;
    gone.disconnect();
    const p = apiProcess(`rl-gone-${Date.now()}`, 3, gone);
    expect(await p(2)).toEqual([200, 200]);
    // Several batches fail meanwhile; the requests stay counted here.
    await settle();
    expect(await p(2)).toEqual([200, 429]);
  });

  it("a process counts the other processes' requests once its own count comes back", async () => {
    await awayFromMinuteEnd();
    const prefix = `rl-two-${Date.now()}`;
    const a = apiProcess(prefix, 5);
    const b = apiProcess(prefix, 5);
    expect(await a(4)).toEqual([200, 200, 200, 200]);
    await settle();
    // b adds its request to the tenant's count and learns there are 5 this minute.
    expect(await b(1)).toEqual([200]);
    await settle();
    expect(await b(1)).toEqual([429]);
    // Every request let through is in the tenant's count; a refused one is not.
    const minute = Math.floor(Date.now() / 60_000);
    expect(Number(await redis.get(`${prefix}:rpm:k:${minute}`))).toBe(5);
  });
});

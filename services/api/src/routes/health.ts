import { Hono } from 'hono';
import { redisWritable, type RedisClient } from '@agentq/shared/infra';
import { errorBody } from '../http-error.js';

/** `/healthz` (the process is up) and `/readyz` (Redis takes writes: every master answers and is a master). */
export function healthRoutes(deps: { redis: RedisClient }) {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    if (await redisWritable(deps.redis)) return c.json({ status: 'ready' });
    return c.json(
      errorBody(
        'service_unavailable',
        'Redis is not reachable, or not every master takes writes (a shard down, a failover)',
      ),
      503,
      { 'retry-after': '1' },
    );
  });
  return app;
}

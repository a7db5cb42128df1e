import { Hono } from 'hono';
import type { Redis } from '@agentq/shared';
import { errorBody } from '../http-error.js';

/** `/healthz` (the process is up) and `/readyz` (Redis answers). */
export function healthRoutes(deps: { redis: Redis }) {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    try {
      const pong = await Promise.race([deps.redis.ping(), new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 1000))]);
      if (pong === 'PONG') return c.json({ status: 'ready' });
    } catch {
      // fall through
    }
    return c.json(errorBody('service_unavailable', 'Redis is not reachable'), 503);
  });
  return app;
}

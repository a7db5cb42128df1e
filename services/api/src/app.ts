import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Queue } from 'bullmq';
import type { AgentqMetrics, Logger, Redis, Resolver, Runs, RunStore } from '@agentq/shared';
import { adminAuth, bearerAuth } from './auth.js';
import { dashboard, DASHBOARD_PATH } from './dashboard.js';
import { errorBody, HttpError, onError } from './http-error.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { docsRoutes } from './routes/docs.js';
import { eventsRoutes } from './routes/events.js';
import { ownRun, runsRoutes } from './routes/runs.js';
import type { EventHub } from './event-hub.js';
import { toolsRoutes } from './routes/tools.js';

export interface AppDeps {
  store: RunStore;
  runs: Runs;
  /** The request-path connection (fails fast, so a Redis outage is a 503, not a hang). */
  redis: Redis;
  hub: EventHub;
  webhookSecret?: string;
  webhookAllowPrivate: boolean;
  /** How a webhook's host is resolved for the check at submission. @defaultValue `dns.lookup` */
  webhookResolve?: Resolver;
  /** Every queue, for the dashboard. */
  queues: Queue[];
  /** Served at `/metrics` (no key needed, like `/healthz`). */
  metrics?: AgentqMetrics;
  logger: Logger;
  apiKeys: string[];
  /** The keys that open the dashboard (it shows every tenant's jobs); none with `apiKeys` set: it is closed. */
  adminKeys?: string[];
  defaultModel?: string;
  limits: { maxBodyBytes: number; maxInputBytes: number; maxContextBytes: number };
}

/** The HTTP API as a Hono app (tests drive it with `app.request()`). */
export function createApp(deps: AppDeps) {
  // Not strict: the dashboard is served at both `/admin/queues` and `/admin/queues/`.
  const app = new Hono<{ Variables: { owner: string } }>({ strict: false });
  app.onError(onError(deps.logger));
  app.notFound((c) => c.json(errorBody('not_found', `no route ${c.req.method} ${c.req.path.slice(0, 200)}`), 404));

  app.route('/', healthRoutes({ redis: deps.redis }));
  if (deps.metrics) app.route('/', metricsRoutes(deps.metrics.registry));
  app.route('/', docsRoutes());

  const auth = bearerAuth(deps.apiKeys);
  const admin = adminAuth(deps.apiKeys, deps.adminKeys ?? []);
  app.use('/v1/*', auth);
  app.use(`${DASHBOARD_PATH}/*`, admin);
  app.use(`${DASHBOARD_PATH}`, admin);
  app.use(
    '/v1/*',
    bodyLimit({
      maxSize: deps.limits.maxBodyBytes,
      onError: () => {
        throw new HttpError(413, 'payload_too_large', `the request body is larger than ${deps.limits.maxBodyBytes} bytes`);
      },
    }),
  );

  app.route('/v1/runs', eventsRoutes({ store: deps.store, hub: deps.hub, logger: deps.logger, ownRun: (owner, id) => ownRun(deps.store, owner, id) }));
  app.route('/v1/runs', runsRoutes(deps));
  app.route('/v1/tools', toolsRoutes({ store: deps.store }));
  app.route(DASHBOARD_PATH, dashboard(deps.queues));
  return app;
}

import { Hono } from 'hono';
import type { Queue } from 'bullmq';
import type { ActionItemView, SchemaValidators } from '@agentq/shared/core';
import type { AgentqMetrics, Logger, RedisClient, Resolver } from '@agentq/shared/infra';
import type { RunStore } from '@agentq/shared/store';
import type { ActionLinks, Admission, RunActions, Runs, TenantTable, UsageMeter } from '@agentq/shared/runs';
import { adminAuth, bearerAuth, keyAccess } from './auth.js';
import { type BodyBudget, drainBody, limitBody } from './body-budget.js';
import { dashboard, DASHBOARD_PATH } from './dashboard.js';
import type { ResponseBudget } from './response-budget.js';
import type { StreamSlots } from './stream-slots.js';
import { errorBody, HttpError, onError } from './http-error.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { docsRoutes } from './routes/docs.js';
import { actionLinkRoutes } from './routes/action-links.js';
import { actionsRoutes } from './routes/actions.js';
import { agentsRoutes } from './routes/agents.js';
import { eventsRoutes } from './routes/events.js';
import { runCountsRoutes } from './routes/run-counts.js';
import { ownRun, runsRoutes } from './routes/runs.js';
import type { EventHub } from './event-hub.js';
import { toolsRoutes } from './routes/tools.js';
import { usageRoutes } from './routes/usage.js';
import { requestLimit } from './rate-limit.js';
import { uiRoutes } from './routes/ui.js';
import { Sessions, withSession } from './session.js';
import { loadUiAssets, uiDistDir } from './ui-assets.js';

export interface AppDeps {
  store: RunStore;
  runs: Runs;
  /** Requests for an answer: decided here, their jobs woken. */
  actions: RunActions;
  /** Checks an approval's edited arguments against the tool's input schema. */
  validators: SchemaValidators;
  /** Adds to each request as it is shown (a signed link, with ACTION_LINK_SECRET). */
  decorateAction?: (item: ActionItemView) => ActionItemView;
  /** With ACTION_LINK_SECRET: checks the signed links that answer a request without a key. */
  actionLinks?: ActionLinks;
  admission: Admission;
  usage: UsageMeter;
  /** Every key's limits (TENANTS_CONFIG). */
  tenants: TenantTable;
  /** The request-path connection (fails fast, so a Redis outage is a 503, not a hang). */
  redis: RedisClient;
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
  /**
   * Keys that open the dashboard (it shows every tenant's jobs), beside API keys marked admin in `tenants`;
   * no API key opens it otherwise.
   */
  adminKeys?: string[];
  defaultModel?: string;
  limits: { maxBodyBytes: number; maxInputBytes: number; maxContextBytes: number };
  /** The request bodies this process holds (MAX_BODIES_IN_FLIGHT_BYTES). */
  bodies: BodyBudget;
  /** The large answers (and events) this process holds until they are sent (MAX_RESPONSES_IN_FLIGHT_BYTES). */
  responses: ResponseBudget;
  /** The event streams this process holds open (MAX_EVENT_STREAMS, MAX_EVENT_STREAMS_PER_KEY). */
  streams: StreamSlots;
  /** How often an event stream with nothing to send writes a keep-alive comment. */
  keepAliveMs: number;
  /** The inspector's build (packages/ui/dist); by default found through the `@agentq/ui` package. */
  uiDir?: string | null;
}

/** The HTTP API as a Hono app (tests drive it with `app.request()`). */
export function createApp(deps: AppDeps) {
  // Not strict: the dashboard is served at both `/admin/queues` and `/admin/queues/`.
  const app = new Hono<{ Variables: { tenant: string } }>({ strict: false });
  app.onError(onError(deps.logger));
  app.notFound((c) => c.json(errorBody('not_found', `no route ${c.req.method} ${c.req.path.slice(0, 200)}`), 404));

  app.route('/', healthRoutes({ redis: deps.redis }));
  if (deps.metrics) app.route('/', metricsRoutes(deps.metrics.registry));
  app.route('/', docsRoutes());

  const budget = deps.bodies.middleware;
  // A signed link is its own key: its two routes are mounted before the key check and the per-tenant
  // rate limit of /v1/*, which therefore never run for them (a handler that answers ends the
  // chain); they bound their bodies themselves. Any other method on that path still meets the key check.
  app.route(
    '/',
    actionLinkRoutes({
      store: deps.store,
      actions: deps.actions,
      validators: deps.validators,
      links: deps.actionLinks,
      budget,
      maxBodyBytes: deps.limits.maxBodyBytes,
    }),
  );

  const isAdmin = (tenant: string) => deps.tenants.byTenant.get(tenant)?.admin === true;
  // A browser login (session cookie) stands in for the key on /v1 and the dashboard: see session.ts.
  const sessions = new Sessions(deps.redis, deps.store.prefix);
  const keysSet = deps.apiKeys.length > 0 || (deps.adminKeys ?? []).length > 0;
  app.route(
    '/',
    uiRoutes({
      assets: loadUiAssets(deps.uiDir === undefined ? uiDistDir() : deps.uiDir),
      sessions,
      access: keyAccess(deps.apiKeys, deps.adminKeys ?? [], isAdmin),
      keysSet,
    }),
  );
  const auth = withSession(sessions, bearerAuth(deps.apiKeys), 'api', keysSet);
  const admin = withSession(sessions, adminAuth(deps.apiKeys, deps.adminKeys ?? [], isAdmin), 'admin', keysSet);
  app.use('/v1/*', auth);
  app.use('/v1/*', requestLimit(deps));
  app.use(`${DASHBOARD_PATH}/*`, admin);
  app.use(`${DASHBOARD_PATH}`, admin);
  app.use('/v1/*', budget);
  app.use(
    '/v1/*',
    limitBody(deps.limits.maxBodyBytes, async (c) => {
      // Let a client that is still sending finish, so that it reads the 413.
      await drainBody(c, 2 * deps.limits.maxBodyBytes);
      throw new HttpError(
        413,
        'payload_too_large',
        `the request body is larger than ${deps.limits.maxBodyBytes} bytes`,
      );
    }),
  );

  // One budget for every large answer this process sends, an SSE stream's large events included.
  app.route(
    '/v1/runs',
    eventsRoutes({
      store: deps.store,
      hub: deps.hub,
      responses: deps.responses,
      streams: deps.streams,
      keepAliveMs: deps.keepAliveMs,
      logger: deps.logger,
      ownRun: (tenant, id) => ownRun(deps.store, tenant, id),
    }),
  );
  app.route('/v1/runs', runCountsRoutes(deps));
  app.route('/v1/runs', runsRoutes(deps));
  app.route(
    '/v1',
    actionsRoutes({
      responses: deps.responses,
      store: deps.store,
      actions: deps.actions,
      validators: deps.validators,
      decorate: deps.decorateAction,
    }),
  );
  app.route('/v1/agents', agentsRoutes({ store: deps.store }));
  app.route('/v1/tools', toolsRoutes({ store: deps.store }));
  app.route('/v1/usage', usageRoutes(deps));
  app.route(DASHBOARD_PATH, dashboard(deps.queues));
  return app;
}

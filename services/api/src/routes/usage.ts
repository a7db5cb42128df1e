import { Hono } from 'hono';
import { limitsOf, type Admission, type TenantTable, type UsageMeter } from '@agentq/shared/runs';

/** `GET /v1/usage`: where the caller's key stands against its limits. */
export function usageRoutes(deps: { admission: Admission; usage: UsageMeter; tenants: TenantTable }) {
  const app = new Hono<{ Variables: { tenant: string } }>();
  app.get('/', async (c) => {
    const tenant = c.get('tenant');
    const [standing, today] = await Promise.all([deps.admission.standing(tenant), deps.usage.today(tenant)]);
    return c.json({
      active_runs: standing.active,
      waiting_runs: standing.waiting,
      queued_runs: standing.queued,
      tokens_today: today.tokens,
      // Summed where the agent-workers know the prices of the models (PROVIDERS_CONFIG).
      cost_usd_today: today.costUsd,
      limits: limitsOf(deps.tenants, tenant),
    });
  });
  return app;
}

import { Hono } from 'hono';
import { renderMetrics, type MetricsRegistry } from '@agentq/shared/infra';

/**
 * `GET /metrics`: Prometheus text. Like `/healthz` it needs no key (the contract lists it
 * beside the health routes, and scrapers seldom carry one); it holds counts by model, tool,
 * status and queue, never a run's content. Keep it off the public internet at the ingress.
 */
export function metricsRoutes(registry: MetricsRegistry) {
  const app = new Hono();
  app.get('/metrics', async (c) => {
    const { body, contentType } = await renderMetrics(registry);
    return c.body(body, 200, { 'content-type': contentType });
  });
  return app;
}

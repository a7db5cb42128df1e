import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';

let server: MetricsServer;
beforeAll(async () => {
  const metrics = createMetrics({ service: 'agent-worker', processMetrics: false });
  metrics.modelTokens.inc({ model: 'm', type: 'input' }, 12);
  server = await startMetricsServer({ registry: metrics.registry, port: 0, host: '127.0.0.1' });
});
afterAll(() => server?.close());

describe('the metrics server of a worker', () => {
  it('serves Prometheus text at /metrics', async () => {
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await res.text()).toContain('agentq_model_tokens_total{model="m",type="input",service="agent-worker"} 12');
  });

  it("answers /healthz, and 404 / 405 in the API's error shape elsewhere", async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const missing = await fetch(`${server.url}/v1/runs`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('binds the given host on a free port when given port 0', () => {
    expect(server.port).toBeGreaterThan(0);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
  });
});

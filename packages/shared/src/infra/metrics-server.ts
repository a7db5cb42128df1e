import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';

export type { Registry as MetricsRegistry };

/** A worker's metrics endpoint: `GET /metrics` (Prometheus text) and `GET /healthz`. */
export interface MetricsServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Renders a registry for a scrape: the body and its content type. */
export async function renderMetrics(registry: Registry): Promise<{ body: string; contentType: string }> {
  return { body: await registry.metrics(), contentType: registry.contentType };
}

/** Serves `registry` on `host:port` (port 0 picks a free one). Workers have no other HTTP server. */
export async function startMetricsServer(opts: {
  registry: Registry;
  port: number;
  host: string;
  logger?: Logger;
}): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (status: number, type: string, body: string) =>
      res.writeHead(status, { 'content-type': type }).end(body);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return reply(
        405,
        'application/json',
        JSON.stringify({ error: { code: 'method_not_allowed', message: 'only GET' } }),
      );
    if (path === '/healthz') return reply(200, 'application/json', '{"status":"ok"}');
    if (path !== '/metrics')
      return reply(
        404,
        'application/json',
        JSON.stringify({ error: { code: 'not_found', message: 'this server has only /metrics and /healthz' } }),
      );
    renderMetrics(opts.registry).then(
      ({ body, contentType }) => reply(200, contentType, body),
      (err: Error) => {
        opts.logger?.warn({ err: err.message }, 'could not collect metrics');
        reply(
          503,
          'application/json',
          JSON.stringify({ error: { code: 'service_unavailable', message: 'metrics could not be collected' } }),
        );
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host}:${port}`;
  opts.logger?.info({ url: `${url}/metrics` }, 'metrics listening');
  return {
    url,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

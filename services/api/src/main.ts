import { createLogger, exitOnConfigError, onShutdown, startTracing } from '@agentq/shared/infra';
import { startApi } from './api.js';
import { loadApiSetup, type ApiConfig } from './config.js';
import type { TenantTable } from '@agentq/shared/runs';

let cfg: ApiConfig;
let tenants: TenantTable;
try {
  ({ cfg, tenants } = loadApiSetup());
} catch (err) {
  exitOnConfigError(err, 'api');
}
const logger = createLogger({ service: 'api', level: cfg.LOG_LEVEL });
const tracing = startTracing({ service: 'api', endpoint: cfg.OTEL_EXPORTER_OTLP_ENDPOINT });
// Signals are handled from the start: a SIGTERM while still connecting exits cleanly too.
const closers: Array<() => Promise<unknown>> = [async () => tracing?.shutdown()];
onShutdown(logger, closers);
logger.info('starting');
const handle = await startApi(cfg, logger, { tracing, tenants });
closers.unshift(() => handle.close());

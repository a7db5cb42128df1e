import { createLogger, exitOnConfigError, onShutdown, startTracing } from '@agentq/shared';
import { startApi } from './api.js';
import { loadApiConfig, type ApiConfig } from './config.js';

let cfg: ApiConfig;
try {
  cfg = loadApiConfig();
} catch (err) {
  exitOnConfigError(err, 'api');
}
const logger = createLogger({ service: 'api', level: cfg.LOG_LEVEL });
const tracing = startTracing({ service: 'api', endpoint: cfg.OTEL_EXPORTER_OTLP_ENDPOINT });
const handle = await startApi(cfg, logger, { tracing });
onShutdown(logger, [() => handle.close(), async () => tracing?.shutdown()]);

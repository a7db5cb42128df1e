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
// Signals are handled from the start: a SIGTERM while still connecting exits cleanly too.
const closers: Array<() => Promise<unknown>> = [async () => tracing?.shutdown()];
onShutdown(logger, closers);
logger.info('starting');
const handle = await startApi(cfg, logger, { tracing });
closers.unshift(() => handle.close());

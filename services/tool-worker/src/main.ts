import { createLogger, exitOnConfigError, onShutdown, startTracing } from '@agentq/shared/infra';
import { loadToolWorkerSetup, type ToolWorkerConfig } from './config.js';
import type { McpConfig } from './mcp-config.js';
import { startToolWorker } from './tool-worker.js';

let cfg: ToolWorkerConfig;
let mcpConfig: McpConfig;
try {
  ({ cfg, mcpConfig } = loadToolWorkerSetup());
} catch (err) {
  exitOnConfigError(err, 'tool-worker');
}
const logger = createLogger({ service: 'tool-worker', level: cfg.LOG_LEVEL });
const tracing = startTracing({ service: 'tool-worker', endpoint: cfg.OTEL_EXPORTER_OTLP_ENDPOINT });
// Signals are handled from the start: a SIGTERM while still connecting exits cleanly too.
const closers: Array<() => Promise<unknown>> = [async () => tracing?.shutdown()];
onShutdown(logger, closers);
logger.info('starting');
const handle = await startToolWorker(cfg, logger, { mcpConfig, tracing });
closers.unshift(() => handle.close());

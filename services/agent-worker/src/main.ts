import { createLogger, exitOnConfigError, onShutdown, startTracing } from '@agentq/shared/infra';
import { startAgentWorker } from './agent-worker.js';
import { loadAgentWorkerConfig, type AgentWorkerConfig } from './config.js';

let cfg: AgentWorkerConfig;
try {
  cfg = loadAgentWorkerConfig();
} catch (err) {
  exitOnConfigError(err, 'agent-worker');
}
const logger = createLogger({ service: 'agent-worker', level: cfg.LOG_LEVEL });
const tracing = startTracing({ service: 'agent-worker', endpoint: cfg.OTEL_EXPORTER_OTLP_ENDPOINT });
// Signals are handled from the start: a SIGTERM while still connecting exits cleanly too.
const closers: Array<() => Promise<unknown>> = [async () => tracing?.shutdown()];
onShutdown(logger, closers);
logger.info('starting');
const handle = await startAgentWorker(cfg, logger, { tracing });
closers.unshift(() => handle.close());

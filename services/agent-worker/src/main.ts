import { createLogger, exitOnConfigError, onShutdown } from '@agentq/shared';
import { startAgentWorker } from './agent-worker.js';
import { loadAgentWorkerConfig, type AgentWorkerConfig } from './config.js';

let cfg: AgentWorkerConfig;
try {
  cfg = loadAgentWorkerConfig();
} catch (err) {
  exitOnConfigError(err, 'agent-worker');
}
const logger = createLogger({ service: 'agent-worker', level: cfg.LOG_LEVEL });
const handle = await startAgentWorker(cfg, logger);
onShutdown(logger, [() => handle.close()]);

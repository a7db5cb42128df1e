import { createLogger, exitOnConfigError, onShutdown } from '@agentq/shared';
import { startApi } from './api.js';
import { loadApiConfig, type ApiConfig } from './config.js';

let cfg: ApiConfig;
try {
  cfg = loadApiConfig();
} catch (err) {
  exitOnConfigError(err, 'api');
}
const logger = createLogger({ service: 'api', level: cfg.LOG_LEVEL });
const handle = await startApi(cfg, logger);
onShutdown(logger, [() => handle.close()]);

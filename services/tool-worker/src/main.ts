import { createLogger, exitOnConfigError, onShutdown } from '@agentq/shared';
import { loadToolWorkerConfig, type ToolWorkerConfig } from './config.js';
import { loadMcpConfig, type McpConfig } from './mcp-config.js';
import { startToolWorker } from './tool-worker.js';

let cfg: ToolWorkerConfig;
let mcpConfig: McpConfig;
try {
  cfg = loadToolWorkerConfig();
  mcpConfig = cfg.MCP_CONFIG ? await loadMcpConfig(cfg.MCP_CONFIG) : { mcpServers: {} };
} catch (err) {
  exitOnConfigError(err, 'tool-worker');
}
const logger = createLogger({ service: 'tool-worker', level: cfg.LOG_LEVEL });
const handle = await startToolWorker(cfg, logger, { mcpConfig });
onShutdown(logger, [() => handle.close()]);

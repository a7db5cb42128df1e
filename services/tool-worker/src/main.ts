import { ConfigError, createLogger, exitOnConfigError, onShutdown, startTracing } from '@agentq/shared';
import { loadToolWorkerConfig, type ToolWorkerConfig } from './config.js';
import { loadMcpConfig, type McpConfig } from './mcp-config.js';
import { startToolWorker } from './tool-worker.js';

let cfg: ToolWorkerConfig;
let mcpConfig: McpConfig;
try {
  // Both checks run before either fails, so one start reports every bad setting.
  const problems: string[] = [];
  const collect = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  };
  const env = collect(() => loadToolWorkerConfig());
  const mcpPath = env?.MCP_CONFIG ?? (process.env.MCP_CONFIG || undefined);
  const mcp = mcpPath ? collect(() => loadMcpConfig(mcpPath)) : { mcpServers: {} };
  if (problems.length) throw new ConfigError(problems);
  cfg = env!;
  mcpConfig = mcp!;
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

import { z } from 'zod';
import { ConfigError } from '@agentq/shared/core';
import {
  actionLinkEnv,
  checkWorkerCells,
  configProblems,
  metricsServerEnv,
  parseEnv,
  workerEnvSchema,
} from '@agentq/shared/infra';
import { loadMcpConfig, type McpConfig } from './mcp-config.js';

export const toolWorkerEnvSchema = workerEnvSchema
  .extend({
    ...metricsServerEnv,
    ...actionLinkEnv,
    /** First webhook retry delay; doubles per attempt (10 attempts span about 85 minutes). */
    WEBHOOK_BACKOFF_BASE_MS: z.coerce.number().int().min(1).default(10_000),
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
    /** The most one message from an MCP server may hold; a bigger answer fails its own call (10 MiB). */
    MCP_MESSAGE_MAX_BYTES: z.coerce
      .number()
      .int()
      .min(64 * 1024)
      .default(10 * 1024 * 1024),
    /**
     * MCP answers (MB) this worker holds at once while reading them from HTTP servers; past it,
     * reading waits, at most 1 s at a time (the answer begun first reads on). Unset: an eighth of the V8 heap limit.
     */
    MCP_ANSWERS_IN_FLIGHT_MB: z.coerce.number().min(1).max(1_048_576).optional(),
    /** Threads that run context_search patterns, at most; more searches at once wait for one. */
    CONTEXT_SEARCH_THREADS: z.coerce.number().int().min(1).max(64).default(2),
    /**
     * The longest one context_search may take, its wait for a thread included (TOOL_TIMEOUT_MS and the run's
     * deadline may cut it shorter).
     */
    CONTEXT_SEARCH_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
    /**
     * How long a sub-agent call waits parked before it looks at its sub-runs again: each sub-run
     * that ends wakes it at once; this bounds the wait should such a wake be lost (a process died).
     */
    SUBRUN_RECHECK_MS: z.coerce.number().int().min(100).default(30_000),
  })
  .superRefine(checkWorkerCells);

/** The tool-worker's configuration, from the environment; throws ConfigError. */
export function loadToolWorkerConfig(env: Record<string, string | undefined> = process.env) {
  return parseEnv(toolWorkerEnvSchema, env);
}
export type ToolWorkerConfig = ReturnType<typeof loadToolWorkerConfig>;

/**
 * The environment and the mcp.json it names, checked together so that one start reports every
 * bad setting (a bad variable does not hide a bad mcp.json); throws one ConfigError.
 */
export function loadToolWorkerSetup(env: Record<string, string | undefined> = process.env): {
  cfg: ToolWorkerConfig;
  mcpConfig: McpConfig;
} {
  const { collect, problems } = configProblems();
  const cfg = collect(() => loadToolWorkerConfig(env));
  const mcpPath = cfg ? cfg.MCP_CONFIG : env.MCP_CONFIG || undefined;
  const mcpConfig = mcpPath ? collect(() => loadMcpConfig(mcpPath)) : { mcpServers: {} };
  if (problems.length || !cfg || !mcpConfig) throw new ConfigError(problems);
  return { cfg, mcpConfig };
}

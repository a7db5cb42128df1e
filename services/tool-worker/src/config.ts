import { z } from 'zod';
import { metricsServerEnv, parseEnv, workerEnvSchema } from '@agentq/shared';

export const toolWorkerEnvSchema = workerEnvSchema.extend({
  ...metricsServerEnv,
  /** First webhook retry delay; doubles per attempt (10 attempts span about 85 minutes). */
  WEBHOOK_BACKOFF_BASE_MS: z.coerce.number().int().min(1).default(10_000),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
});

/** The tool-worker's configuration, from the environment; throws ConfigError. */
export function loadToolWorkerConfig(env: Record<string, string | undefined> = process.env) {
  return parseEnv(toolWorkerEnvSchema, env);
}
export type ToolWorkerConfig = ReturnType<typeof loadToolWorkerConfig>;

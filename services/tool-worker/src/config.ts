import { parseEnv, workerEnvSchema } from '@agentq/shared';

export const toolWorkerEnvSchema = workerEnvSchema.extend({});

/** The tool-worker's configuration, from the environment; throws ConfigError. */
export function loadToolWorkerConfig(env: Record<string, string | undefined> = process.env) {
  return parseEnv(toolWorkerEnvSchema, env);
}
export type ToolWorkerConfig = ReturnType<typeof loadToolWorkerConfig>;

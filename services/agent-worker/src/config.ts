import { metricsServerEnv, parseEnv, workerEnvSchema } from '@agentq/shared';

export const agentWorkerEnvSchema = workerEnvSchema.extend({ ...metricsServerEnv });

/** The agent-worker's configuration, from the environment; throws ConfigError. */
export function loadAgentWorkerConfig(env: Record<string, string | undefined> = process.env) {
  return parseEnv(agentWorkerEnvSchema, env);
}
export type AgentWorkerConfig = ReturnType<typeof loadAgentWorkerConfig>;

import { z } from 'zod';
import { boolString, checkWorkerCells, metricsServerEnv, parseEnv, workerEnvSchema } from '@agentq/shared';

/** `<max>/<ms>`: at most `max` model steps per `ms` milliseconds across every agent-worker. */
const rateLimit = z
  .string()
  .regex(/^\d+\/\d+$/, 'must be <max>/<milliseconds>, e.g. 500/60000')
  .transform((v) => {
    const [max, duration] = v.split('/').map(Number);
    return { max, duration };
  })
  .refine((r) => r.max >= 1 && r.duration >= 1, 'max and milliseconds must be at least 1');

export const agentWorkerEnvSchema = workerEnvSchema
  .extend({
    ...metricsServerEnv,
    AGENT_RATE_LIMIT: rateLimit.optional(),
    /** First retry delay of a failed model step without Retry-After; doubles per attempt (±50 % jitter). */
    MODEL_BACKOFF_BASE_MS: z.coerce.number().int().min(1).default(1000),
    /** The longest a step waits, in all, for a provider that keeps answering 429; past it the run fails with model_rate_limited. */
    MODEL_RATE_LIMIT_MAX_WAIT_MS: z.coerce.number().int().min(1).default(900_000),
    /** Transcripts kept between a run's steps, so that the next step reads only what was added (MB of stored JSON; 0: off). */
    TRANSCRIPT_CACHE_MB: z.coerce.number().min(0).max(65_536).default(16),
    /**
     * Transcripts (MB of stored JSON) this worker's steps in flight may hold at once; a step waits
     * for room before reading its transcript, and a run whose transcript alone is larger fails.
     * Unset: a sixteenth of the V8 heap limit.
     */
    TRANSCRIPTS_IN_FLIGHT_MB: z.coerce.number().min(1).max(1_048_576).optional(),
    /**
     * How model calls reach the endpoint: `node` (node:http keep-alive connections, model-http.ts)
     * or `fetch` (the platform's fetch, the openai SDK's default).
     */
    MODEL_HTTP_CLIENT: z.enum(['node', 'fetch']).default('node'),
    /** Largest model response read (MB of the HTTP body, SSE framing included); past it the step fails with model_response_too_large, with either MODEL_HTTP_CLIENT. */
    MODEL_RESPONSE_MAX_MB: z.coerce.number().min(1).max(65_536).default(64),
  })
  .superRefine(checkWorkerCells);

/** The agent-worker's configuration, from the environment; throws ConfigError. */
export function loadAgentWorkerConfig(env: Record<string, string | undefined> = process.env) {
  return parseEnv(agentWorkerEnvSchema, env);
}
export type AgentWorkerConfig = ReturnType<typeof loadAgentWorkerConfig>;

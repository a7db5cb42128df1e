import { z } from 'zod';
import { ConfigError } from '@agentq/shared/core';
import { checkWorkerCells, configProblems, metricsServerEnv, parseEnv, workerEnvSchema } from '@agentq/shared/infra';
import { loadProviders } from './providers-config.js';

/** `<max>/<ms>`: at most `max` model steps per `ms` milliseconds across every agent-worker. */
const rateLimit = z
  .string()
  .regex(/^\d+\/\d+$/, 'must be <max>/<milliseconds>, e.g. 500/60000')
  .transform((v) => {
    const [max, duration] = v.split('/').map(Number);
    return { max, duration };
  })
  .refine((r) => r.max >= 1 && r.duration >= 1, 'max and milliseconds must be at least 1');

/** The proxy variables Node's proxy support reads a URL from (the upper-case name wins). */
const PROXY_URL_VARS = ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy'] as const;
const PROXY_VARS = [...PROXY_URL_VARS, 'NO_PROXY', 'no_proxy'] as const;

const isProxyUrl = (v: string) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol);

/** Proxies are on as Node has them on: NODE_USE_ENV_PROXY=1, or --use-env-proxy on its command line or in NODE_OPTIONS. */
function proxiesOn(env: { NODE_USE_ENV_PROXY?: string; NODE_OPTIONS?: string }, execArgv: readonly string[]): boolean {
  return (
    env.NODE_USE_ENV_PROXY === '1' ||
    execArgv.includes('--use-env-proxy') ||
    /(^|\s)--use-env-proxy(\s|$)/.test(env.NODE_OPTIONS ?? '')
  );
}

export const agentWorkerEnvSchema = workerEnvSchema
  .extend({
    ...metricsServerEnv,
    AGENT_RATE_LIMIT: rateLimit.optional(),
    /** Path to the model providers file (see providers-config.ts); unset: OPENAI_BASE_URL serves every model. */
    PROVIDERS_CONFIG: z.string().min(1).optional(),
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
    /** Largest model response read (MB of the HTTP body, SSE framing included); past it the step fails with model_response_too_large. */
    MODEL_RESPONSE_MAX_MB: z.coerce.number().min(1).max(65_536).default(64),
    /**
     * Model answers (MB of the HTTP bodies) this worker's steps may hold at once, each from its
     * first byte until its step ends; past it a step waits before reading more, and an answer
     * alone larger fails its run with model_response_too_large. Unset: a sixteenth of the V8
     * heap limit.
     */
    MODEL_ANSWERS_IN_FLIGHT_MB: z.coerce.number().min(1).max(1_048_576).optional(),
    /** Node's proxy support for model calls, as for fetch: `1` turns it on (as `--use-env-proxy` does). */
    NODE_USE_ENV_PROXY: z.enum(['0', '1'], { error: 'must be 1 (proxies on) or 0' }).optional(),
    NODE_OPTIONS: z.string().optional(),
    /** The proxies model calls go through when proxies are on, and the hosts they do not (checked then). */
    HTTP_PROXY: z.string().optional(),
    http_proxy: z.string().optional(),
    HTTPS_PROXY: z.string().optional(),
    https_proxy: z.string().optional(),
    NO_PROXY: z.string().optional(),
    no_proxy: z.string().optional(),
  })
  .superRefine(checkWorkerCells);

/**
 * The agent-worker's configuration, from the environment (and Node's command line, for
 * --use-env-proxy); throws ConfigError. `modelProxyEnv` is what model calls read their proxy
 * from (http.Agent's `proxyEnv`) when proxies are on: the proxy variables set, each proxy URL
 * checked, so that a mistyped one stops the worker with its name rather than failing every call.
 */
export function loadAgentWorkerConfig(
  env: Record<string, string | undefined> = process.env,
  execArgv: readonly string[] = process.execArgv,
) {
  const schema = agentWorkerEnvSchema.superRefine((e, ctx) => {
    if (!proxiesOn(e, execArgv)) return;
    for (const name of PROXY_URL_VARS) {
      const value = e[name];
      if (value !== undefined && !isProxyUrl(value))
        ctx.addIssue({ code: 'custom', path: [name], message: 'must be an http:// or https:// URL of a proxy' });
    }
  });
  // The environment and the PROVIDERS_CONFIG it names are checked together: one start reports every problem.
  const { collect, problems } = configProblems();
  const parsed = collect(() => parseEnv(schema, env));
  const providersPath = parsed ? parsed.PROVIDERS_CONFIG : env.PROVIDERS_CONFIG || undefined;
  const providers = collect(() => (providersPath ? loadProviders(providersPath, env) : undefined));
  if (problems.length || !parsed) throw new ConfigError(problems);
  const cfg = parsed;
  let modelProxyEnv: Record<string, string> | undefined;
  if (proxiesOn(cfg, execArgv)) {
    modelProxyEnv = {};
    for (const name of PROXY_VARS) {
      const value = cfg[name];
      if (value !== undefined) modelProxyEnv[name] = value;
    }
  }
  return { ...cfg, modelProxyEnv, providers };
}
export type AgentWorkerConfig = ReturnType<typeof loadAgentWorkerConfig>;

import { z } from 'zod';
import { ConfigError } from '@agentq/shared/core';
import { actionLinkEnv, baseEnvSchema, boolString, configProblems, parseEnv } from '@agentq/shared/infra';
import { type TenantTable } from '@agentq/shared/runs';
import { loadTenants } from './tenants-config.js';

/** A comma-separated list of bearer keys. */
const keyList = z
  .string()
  .optional()
  .transform((v) =>
    v
      ? v
          .split(',')
          .map((k) => k.trim())
          .filter(Boolean)
      : [],
  )
  .refine((keys) => keys.every((k) => k.length >= 8), 'every key must be at least 8 characters');

export const apiEnvSchema = baseEnvSchema.extend({
  ...actionLinkEnv,
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  MODEL: z.string().min(1).optional(),
  API_KEYS: keyList,
  /** Keys for the dashboard only; unset = closed when API_KEYS is set, open when the API is. */
  ADMIN_API_KEYS: keyList,
  WEBHOOK_SECRET: z.string().min(1).optional(),
  WEBHOOK_ALLOW_PRIVATE: boolString.default(false),
  /** The whole request body. */
  MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(34 * 1024 * 1024),
  /** `input`, `messages` and `instructions` together. */
  MAX_INPUT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  MAX_CONTEXT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(32 * 1024 * 1024),
  /** Request bodies one API process holds at once; past it a request gets 503 with Retry-After. */
  MAX_BODIES_IN_FLIGHT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(48 * 1024 * 1024),
  /**
   * Large answers (a run, its transcript, steps, sub-runs, an event stream's events; 64 KB and over) one API
   * process holds until sent; past it 503 with Retry-After (an event stream waits).
   */
  MAX_RESPONSES_IN_FLIGHT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024 * 1024),
  /**
   * How long a connection may make no progress (its client sends nothing and takes none of what
   * it is sent) before the API closes it: what bounds how long a client that stops reading holds
   * its answer's room in MAX_RESPONSES_IN_FLIGHT_BYTES and its stream's slot. Event streams send
   * a keep-alive comment every third of it (at most every 15 s).
   */
  CLIENT_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1000).default(120_000),
  /** Event streams (`GET /v1/runs/:id/events`) one API process holds open at once; past it 503 with Retry-After. */
  MAX_EVENT_STREAMS: z.coerce.number().int().min(1).default(10_000),
  /** Event streams one key holds open on one API process at once; past it 429 rate_limited. */
  MAX_EVENT_STREAMS_PER_KEY: z.coerce.number().int().min(1).default(1_000),
  /** How often this process looks for runs whose creator died before enqueueing them. */
  PENDING_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(5_000),
  /** How long a run may stay pending before a sweep enqueues it (a live creator takes milliseconds). */
  PENDING_SWEEP_GRACE_MS: z.coerce.number().int().min(0).default(1_000),
  /** Path to the per-tenant limits and weights (see "Limits and fairness"); unset: the defaults for every key. */
  TENANTS_CONFIG: z.string().min(1).optional(),
  /** Replicas that must hold a new run (its writes) before its 202; 0: no wait (asynchronous replication). */
  REDIS_WAIT_REPLICAS: z.coerce.number().int().min(0).max(16).default(0),
  /** How long a new run waits for those replicas; past it, 503 replication_timeout. */
  REDIS_WAIT_TIMEOUT_MS: z.coerce.number().int().min(1).default(1_000),
  /** For tests only: the process kills itself (SIGKILL) at this point of a run's creation. */
  AGENTQ_FAILPOINT: z.enum(['run_written', 'action_decided']).optional(),
});

/** The API's configuration, from the environment; throws ConfigError. */
export function loadApiConfig(env: Record<string, string | undefined> = process.env) {
  return parseEnv(apiEnvSchema, env);
}
export type ApiConfig = ReturnType<typeof loadApiConfig>;

/**
 * The environment and the TENANTS_CONFIG it names, checked together so that one start reports
 * every bad setting; throws one ConfigError.
 */
export function loadApiSetup(env: Record<string, string | undefined> = process.env): {
  cfg: ApiConfig;
  tenants: TenantTable;
} {
  const { collect, problems } = configProblems();
  const cfg = collect(() => loadApiConfig(env));
  const tenants = collect(() => loadTenants(cfg ? cfg.TENANTS_CONFIG : env.TENANTS_CONFIG || undefined));
  if (problems.length || !cfg || !tenants) throw new ConfigError(problems);
  return { cfg, tenants };
}

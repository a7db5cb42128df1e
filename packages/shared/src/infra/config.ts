import { z } from 'zod';
import { MIN_ACTION_LINK_SECRET_CHARS } from '../actions/action-links.js';
import { ConfigError } from '../core/errors.js';
import { parseRedisUrl, redactUrl } from './redis-url.js';

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const redisUrl = z
  .string()
  .default('redis://127.0.0.1:6379')
  .superRefine((v, ctx) => {
    try {
      parseRedisUrl(v);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });

const boolString = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Variables every service reads. */
export const baseEnvSchema = z.object({
  REDIS_URL: redisUrl,
  QUEUE_PREFIX: z
    .string()
    .default('agentq')
    .refine((v) => /^[A-Za-z0-9_.-]{1,64}$/.test(v), 'must be 1-64 of A-Z a-z 0-9 _ . - (no ":")'),
  LOG_LEVEL: z.enum(logLevels).default('info'),
  RUN_RETENTION_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .default(7 * 24 * 3600),
  /** Independent sets of queues, each under its own hash tag (a Redis Cluster spreads them over shards). */
  CELLS: z.coerce.number().int().min(1).max(1024).default(1),
  /** Base URL of an OTLP/HTTP collector; tracing is off when unset. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
});

/** A worker's metrics endpoint: `METRICS_PORT` unset means none; `HOST` is the address it binds. */
export const metricsServerEnv = {
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  HOST: z.string().min(1).default('0.0.0.0'),
};

/**
 * Signed links that answer a request without an API key (the API serves them, the API and the
 * tool-worker's webhooks show them): `ACTION_LINK_SECRET` turns them on and must be the same in
 * every process; `PUBLIC_URL` makes them absolute.
 */
export const actionLinkEnv = {
  ACTION_LINK_SECRET: z
    .string()
    .min(
      MIN_ACTION_LINK_SECRET_CHARS,
      `must be at least ${MIN_ACTION_LINK_SECRET_CHARS} characters (e.g. the output of "openssl rand -base64 32")`,
    )
    .optional(),
  /** Where clients reach the API, e.g. `https://agentq.example.com` (a path prefix is kept). */
  PUBLIC_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    // zod runs this refinement on a value that failed the URL check too: parse defensively.
    .refine((v) => {
      const u = URL.canParse(v) ? new URL(v) : null;
      return !u || (!u.search && !u.hash && !u.username && !u.password);
    }, 'must be a base URL: no query, fragment or credentials')
    .optional(),
};

/** Variables of the workers that talk to the model and the tools. */
export const workerEnvSchema = baseEnvSchema.extend({
  OPENAI_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  OPENAI_API_KEY: z.string().optional(),
  MODEL: z.string().min(1).optional(),
  MCP_CONFIG: z.string().min(1).optional(),
  WEBHOOK_SECRET: z.string().min(1).optional(),
  WEBHOOK_ALLOW_PRIVATE: boolString.default(false),
  AGENT_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(100),
  TOOL_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(100),
  TOOL_TIMEOUT_MS: z.coerce.number().int().min(1).default(60_000),
  /** One model step, request to last chunk. */
  MODEL_TIMEOUT_MS: z.coerce.number().int().min(1).default(600_000),
  /** The longest silence between two chunks of a model's stream. */
  MODEL_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1).default(300_000),
  TOOL_OUTPUT_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(100 * 1024),
  /** How long a job's lock lasts without renewal: the longest a dead worker holds a job. */
  JOB_LOCK_MS: z.coerce.number().int().min(500).default(10_000),
  /** How often workers look for jobs whose lock lapsed (a dead worker's). */
  STALLED_INTERVAL_MS: z.coerce.number().int().min(100).default(3_000),
  /**
   * The longest a tool call waiting for an answer stays parked at once (a request without
   * expiry); it then wakes, finds no answer and parks again. Tests set it low.
   */
  ACTION_PARK_MAX_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .max(365 * 24 * 3600 * 1000)
    .default(30 * 24 * 3600 * 1000),
  /** The cells this worker serves (e.g. `0,2`); unset: all of them. */
  WORKER_CELLS: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'a comma-separated list of cell numbers, e.g. 0,2')
    .transform((v) => [...new Set(v.split(',').map(Number))])
    .optional(),
});

/** A worker's WORKER_CELLS must name cells that exist (below CELLS): a superRefine for its env schema. */
export function checkWorkerCells(env: { CELLS: number; WORKER_CELLS?: number[] }, ctx: z.RefinementCtx): void {
  const bad = env.WORKER_CELLS?.filter((c) => c >= env.CELLS);
  if (bad?.length)
    ctx.addIssue({
      code: 'custom',
      path: ['WORKER_CELLS'],
      message: `cells ${bad.join(', ')} do not exist: CELLS is ${env.CELLS} (cells 0 to ${env.CELLS - 1})`,
    });
}

export { boolString };

/**
 * Parses `env` with `schema`; every bad variable becomes one line of the thrown ConfigError
 * (`NAME: what is wrong (got "value")`), so a service can refuse to start with a clear message.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: Record<string, string | undefined>): z.output<S> {
  // Empty strings count as unset: `FOO= node main.js` should mean the default.
  const cleaned: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') cleaned[k] = v;
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = issue.path.map(String).join('.') || '(environment)';
    const value = cleaned[name];
    // Secrets never reach a terminal or a log: named ones are hidden, and so is a URL's password.
    const secret = /KEY|SECRET|TOKEN|PASSWORD/.test(name);
    const safe = value === undefined ? undefined : redactUrl(value);
    const shown = safe === undefined ? '' : secret ? ' (value hidden)' : ` (got ${JSON.stringify(safe.slice(0, 80))})`;
    return `${name}: ${issue.message}${shown}`;
  });
  throw new ConfigError(problems);
}

/**
 * Gathers the problems of several config loaders (`collect(loader)` returns what the loader
 * returned, or undefined if it threw a ConfigError), so that one start reports every bad setting.
 */
export function configProblems(): { collect: <T>(load: () => T) => T | undefined; problems: string[] } {
  const problems: string[] = [];
  const collect = <T>(load: () => T): T | undefined => {
    try {
      return load();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  };
  return { collect, problems };
}

/** Prints a ConfigError as one line per problem and exits; anything else is rethrown. */
export function exitOnConfigError(err: unknown, service: string): never {
  if (err instanceof ConfigError) {
    for (const p of err.problems) process.stderr.write(`${service}: invalid configuration: ${p}\n`);
    process.exit(78);
  }
  throw err;
}

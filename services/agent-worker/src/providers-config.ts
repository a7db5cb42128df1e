import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '@agentq/shared/core';

/** A provider's name: what comes before the `/` of a run's `model` ("openai/gpt-4o"). */
const providerName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, '1-64 of a-z 0-9 _ -, starting with a letter or digit');

/** `<max>/<ms>`: at most `max` model calls per `ms` milliseconds, across every agent-worker. */
export const rateLimitSchema = z
  .string()
  .regex(/^[1-9]\d{0,8}\/[1-9]\d{0,9}$/, 'must be <max calls>/<milliseconds>, e.g. "500/60000", both at least 1')
  .transform((v) => {
    const [max, ms] = v.split('/').map(Number) as [number, number];
    return { max, ms };
  });

const perMillion = z.number().min(0).max(1_000_000);

/** A model's prices, US dollars per million tokens. */
const priceSchema = z.strictObject({
  input_per_mtok: perMillion,
  output_per_mtok: perMillion,
  cached_input_per_mtok: perMillion.optional(),
});
export type ModelPrice = z.infer<typeof priceSchema>;

const providerSchema = z.strictObject({
  base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  /** The environment variable that holds the key (sent as `Authorization: Bearer`); unset: no key. */
  api_key_env: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable')
    .optional(),
  headers: z.record(z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name'), z.string()).optional(),
  /** Model calls one agent-worker process makes to this provider at once. */
  concurrency: z.number().int().min(1).max(100_000).optional(),
  rate_limit: rateLimitSchema.optional(),
  /** Prices of the provider's models, by the name sent to it (without `<provider>/`). */
  models: z.record(z.string().min(1), priceSchema).optional(),
});

/** The PROVIDERS_CONFIG file. */
export const providersFileSchema = z
  .strictObject({
    default: providerName,
    providers: z.record(providerName, providerSchema).refine((p) => Object.keys(p).length > 0, 'name one provider'),
  })
  .superRefine((f, ctx) => {
    if (!(f.default in f.providers))
      ctx.addIssue({
        code: 'custom',
        path: ['default'],
        message: `names no provider of "providers" (${Object.keys(f.providers).join(', ')})`,
      });
  });

/** One provider as the agent-worker uses it: the file's entry with its key read from the environment. */
export interface ProviderConfig {
  name: string;
  baseUrl: string;
  apiKey?: string;
  headers: Record<string, string>;
  concurrency?: number;
  rateLimit?: { max: number; ms: number };
  prices: Record<string, ModelPrice>;
}

/** Every provider, and the one a model without a provider's name goes to. */
export interface ProvidersConfig {
  default: string;
  providers: ProviderConfig[];
}

/**
 * Reads and checks PROVIDERS_CONFIG and the key variables it names in `env`; throws one
 * ConfigError naming each problem (`PROVIDERS_CONFIG: providers.openai.rate_limit: …`).
 */
export function loadProviders(path: string, env: Record<string, string | undefined>): ProvidersConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError([`PROVIDERS_CONFIG: cannot read ${path} as JSON: ${(err as Error).message}`]);
  }
  const parsed = providersFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.flatMap((i) => {
        const at = i.path.map(String).join('.');
        // An unknown field is named, each on its line.
        if (i.code === 'unrecognized_keys')
          return i.keys.map((k) => `PROVIDERS_CONFIG: ${at ? `${at}.` : ''}${k}: unknown field`);
        // A bad record key (a provider's name) says why in its own issues.
        const why = i.code === 'invalid_key' ? (i.issues[0]?.message ?? i.message) : i.message;
        return [`PROVIDERS_CONFIG: ${at || '(file)'}: ${why}`];
      }),
    );
  }
  const problems: string[] = [];
  const providers = Object.entries(parsed.data.providers).map(([name, p]): ProviderConfig => {
    const key = p.api_key_env === undefined ? undefined : env[p.api_key_env];
    if (p.api_key_env !== undefined && !key)
      problems.push(
        `PROVIDERS_CONFIG: providers.${name}.api_key_env: the variable ${p.api_key_env} is not set (it holds the key)`,
      );
    return {
      name,
      baseUrl: p.base_url,
      ...(key ? { apiKey: key } : {}),
      headers: p.headers ?? {},
      ...(p.concurrency !== undefined ? { concurrency: p.concurrency } : {}),
      ...(p.rate_limit ? { rateLimit: p.rate_limit } : {}),
      prices: p.models ?? {},
    };
  });
  if (problems.length) throw new ConfigError(problems);
  return { default: parsed.data.default, providers };
}

import { z } from 'zod';

/** A key's limits (TENANTS_CONFIG, "Limits and fairness" in API.md). */
export const tenantLimitsSchema = z.strictObject({
  /** Runs of the key running at once (root and sub-runs); more wait in the tenant's own line. */
  max_active_runs: z.number().int().min(1).max(1_000_000),
  /** Root runs waiting in the tenant's line; past it a new run gets 429. */
  max_queued_runs: z.number().int().min(0).max(10_000_000),
  /** Every `/v1` request of the key, per minute. */
  requests_per_minute: z.number().int().min(1).max(10_000_000),
  /** Runs in one tree (a root and all its sub-runs); the agent_query call that would pass it gets an error result. */
  max_runs_per_tree: z.number().int().min(1).max(1_000_000),
  /** Tokens a day (UTC), over all the tenant's runs; null = no limit. */
  max_tokens_per_day: z.number().int().min(1).nullable(),
  /** The key's share of free capacity, against the other keys' weights. */
  weight: z.number().min(0.01).max(10_000),
});
export type TenantLimits = z.infer<typeof tenantLimitsSchema>;

export const DEFAULT_TENANT_LIMITS: TenantLimits = {
  max_active_runs: 100,
  max_queued_runs: 10_000,
  requests_per_minute: 6_000,
  max_runs_per_tree: 1_000,
  max_tokens_per_day: null,
  weight: 1,
};

const keyEntrySchema = tenantLimitsSchema.partial().extend({
  /** The SHA-256 (hex) of the key: the file never holds a key itself. */
  key_sha256: z.string().regex(/^[0-9a-f]{64}$/, 'the SHA-256 of the key, 64 lowercase hex digits'),
  /** The key may open /admin (the dashboard shows every tenant's jobs). */
  admin: z.boolean().optional(),
});

/** The TENANTS_CONFIG file. */
export const tenantsConfigSchema = z.strictObject({
  default: tenantLimitsSchema.partial().optional(),
  /**
   * Runs of all keys running at once, shared out by weight when it is the limit (unset: only
   * each tenant's own max_active_runs bounds it).
   */
  total_active_runs: z.number().int().min(1).optional(),
  keys: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, '1-64 of A-Z a-z 0-9 _ . -'), keyEntrySchema).default({}),
});
export type TenantsConfig = z.infer<typeof tenantsConfigSchema>;

/** The tenant id of a key from its SHA-256 hex (the API's tenantOf gives the same for the key). */
export const tenantOfSha256 = (sha256Hex: string) => sha256Hex.slice(0, 24);

/** Every key's limits resolved from a TENANTS_CONFIG: by tenant id, the default for the rest. */
export interface TenantTable {
  defaults: TenantLimits;
  totalActiveRuns?: number;
  byTenant: Map<string, TenantLimits & { name: string; admin: boolean }>;
}

export function tenantTable(cfg: TenantsConfig | undefined): TenantTable {
  const defaults = { ...DEFAULT_TENANT_LIMITS, ...cfg?.default };
  const byTenant = new Map<string, TenantLimits & { name: string; admin: boolean }>();
  for (const [name, { key_sha256, admin, ...limits }] of Object.entries(cfg?.keys ?? {})) {
    byTenant.set(tenantOfSha256(key_sha256), { ...defaults, ...limits, name, admin: admin ?? false });
  }
  return { defaults, ...(cfg?.total_active_runs ? { totalActiveRuns: cfg.total_active_runs } : {}), byTenant };
}

/** The limits of one tenant. */
export function limitsOf(table: TenantTable, tenant: string): TenantLimits {
  const t = table.byTenant.get(tenant);
  if (!t) return table.defaults;
  const { name: _name, admin: _admin, ...limits } = t;
  return limits;
}

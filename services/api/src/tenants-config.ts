import { readFileSync } from 'node:fs';
import { ConfigError } from '@agentq/shared/core';
import { tenantsConfigSchema, tenantTable, type TenantTable } from '@agentq/shared/runs';

/** Reads and checks TENANTS_CONFIG; unset gives the defaults for every key. Throws ConfigError naming each problem. */
export function loadTenants(path: string | undefined): TenantTable {
  if (!path) return tenantTable(undefined);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError([`TENANTS_CONFIG: cannot read ${path} as JSON: ${(err as Error).message}`]);
  }
  const parsed = tenantsConfigSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => `TENANTS_CONFIG: ${i.path.map(String).join('.') || '(file)'}: ${i.message}`),
    );
  }
  return tenantTable(parsed.data);
}

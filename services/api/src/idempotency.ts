import { createHash } from 'node:crypto';
import type { RedisClient } from '@agentq/shared/infra';
import { HttpError } from './http-error.js';

const TTL_SECONDS = 24 * 3600;

/** A claim whose run never appeared for this long is taken to belong to a request that died. */
export const ABANDONED_CLAIM_MS = 30_000;

/** What an Idempotency-Key resolves to: a new run to create, or the run made (or reserved) before. */
/** `key`: the claim's Redis key (REDIS_WAIT_REPLICAS waits for it with the run's own). */
export type IdempotencyClaim =
  | { kind: 'new'; key: string; release: () => Promise<void> }
  | { kind: 'replay'; key: string; runId: string; claimedAt: number; takeOver: () => Promise<IdempotencyClaim> };

// Deletes the claim only if it is still the one read (another request may have taken it over).
const DELETE_IF_SAME = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/**
 * Claims an Idempotency-Key for a body, scoped to the caller (tenant). The first request wins
 * atomically (SET NX) and reserves `runId`; a repeat with the same body gets that run, with
 * another body a 409. Keys are remembered 24 h. A replay whose reserved run never appeared can
 * take the claim over (`takeOver`): the request that made it died before writing its run.
 */
export async function claimIdempotencyKey(
  redis: RedisClient,
  keyName: (tenant: string, key: string) => string,
  tenant: string,
  key: string,
  body: unknown,
  runId: string,
): Promise<IdempotencyClaim> {
  if (key.length === 0 || key.length > 255)
    throw new HttpError(400, 'validation_error', 'Idempotency-Key must be 1-255 characters', [
      { field: 'Idempotency-Key', message: '1-255 characters' },
    ]);
  const k = keyName(tenant, createHash('sha256').update(key).digest('hex'));
  const bodyHash = createHash('sha256').update(JSON.stringify(body)).digest('hex');
  const value = `${bodyHash}:${runId}:${Date.now()}`;
  const set = await redis.set(k, value, 'EX', TTL_SECONDS, 'NX');
  if (set === 'OK') return { kind: 'new', key: k, release: async () => void (await redis.del(k)) };
  const existing = await redis.get(k);
  if (!existing) return claimIdempotencyKey(redis, keyName, tenant, key, body, runId);
  const [hash, prior, at] = existing.split(':');
  if (hash !== bodyHash) {
    throw new HttpError(
      409,
      'idempotency_key_reused',
      'this Idempotency-Key was used with a different request body; use a new key for a new request',
    );
  }
  return {
    kind: 'replay',
    key: k,
    runId: prior,
    // Claims written before the time was recorded count as old.
    claimedAt: Number(at ?? 0),
    takeOver: async () => {
      await redis.eval(DELETE_IF_SAME, 1, k, existing);
      return claimIdempotencyKey(redis, keyName, tenant, key, body, runId);
    },
  };
}

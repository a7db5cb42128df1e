import calculateSlot from 'cluster-key-slot';
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from './redis.js';

/**
 * Waits until `replicas` replicas hold what the given connections wrote so far (Redis's WAIT,
 * which counts one connection's writes): on a Cluster, on the master of each of `keys`' slots.
 * Returns the fewest replicas that acknowledged, within `timeoutMs`.
 */
export async function waitForReplicas(
  clients: RedisClient[],
  keys: string[],
  replicas: number,
  timeoutMs: number,
): Promise<number> {
  const nodes = new Set<Pick<Redis, 'call'>>();
  for (const client of clients) {
    if (!isCluster(client)) {
      nodes.add(client);
      continue;
    }
    const masters = client.nodes('master');
    for (const key of keys) {
      const tenant = client.slots[calculateSlot(key)]?.[0];
      const node = masters.find((n) => `${n.options.host}:${n.options.port}` === tenant);
      if (node) nodes.add(node);
    }
  }
  const acks = await Promise.all([...nodes].map(async (n) => Number(await n.call('WAIT', replicas, timeoutMs))));
  return acks.length ? Math.min(...acks) : 0;
}

import { afterAll, expect, inject, it } from 'vitest';
import { createRedis, waitForReady, type Cluster } from '@agentq/shared/infra';
import { recordWrites } from '../fixtures/socket-writes.js';

// On a Cluster a client holds one socket per node: each writes in bursts, as a single Redis's does.
const cluster = createRedis(inject('redisUrl'), { name: 'write-bursts-test', blocking: true }) as Cluster;
afterAll(() => cluster.disconnect());

it("a Cluster node's connection sends a command and the one issued after it in one write, in order", async () => {
  expect(await waitForReady(cluster)).toBe(true);
  const key = `{wb${Date.now()}}k`;
  await cluster.set(key, '0');
  await new Promise((r) => setTimeout(r, 1));
  const recs = cluster
    .nodes('master')
    .filter((node) => node.stream)
    .map((node) => recordWrites(node.stream));
  try {
    const first = cluster.set(key, '1');
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(await Promise.all([first, cluster.get(key)])).toEqual(['OK', '1']);
  } finally {
    for (const r of recs) r.stop();
    await cluster.del(key);
  }
  // Both went to the tenant's node, in one write; the other nodes got neither.
  expect(recs.map((r) => r.writes).filter((w) => w.length > 0)).toEqual([[['SET', 'GET']]]);
});

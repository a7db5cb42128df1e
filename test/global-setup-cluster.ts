import type { TestProject } from 'vitest/node';
import { startCluster } from './fixtures/redis-topologies.js';

/**
 * The Cluster suite's Redis: a local Redis Cluster of three masters on free loopback ports,
 * started for the run and stopped after it; the loop's tests run on it unchanged.
 */
export default async function setup(project: TestProject) {
  const cluster = await startCluster({ masters: 3 });
  project.provide('redisUrl', cluster.url);
  return () => cluster.stop();
}

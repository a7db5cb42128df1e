import type { TestProject } from 'vitest/node';
import { findRedis } from './fixtures/redis.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

/** One Redis for the whole run; each test file isolates itself with its own QUEUE_PREFIX. */
export default async function setup(project: TestProject) {
  const redis = await findRedis();
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}

// The demo's two direct uses of Redis, beside agentq rather than through it: is one there at
// all, and removing the demo's keys afterwards so that a shared Redis is left as it was.
import { Redis } from 'ioredis';

/** True when a Redis answers PING at `url` within `timeoutMs`. */
export async function pingRedis(url, timeoutMs = 2000) {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  redis.on('error', () => {}); // the answer is the boolean
  let timer;
  // connectTimeout covers the TCP connect only: a server that accepts and never answers needs this.
  const deadline = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), timeoutMs)));
  try {
    await Promise.race([redis.connect().then(() => redis.ping()), deadline]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    redis.disconnect();
  }
}

/** Deletes every key under `<prefix>:` (SCAN + UNLINK, so a large namespace never blocks Redis). */
export async function deleteKeys(url, prefix) {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {}); // a failure surfaces as the rejected command
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

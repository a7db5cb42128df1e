import { isCluster, type RedisClient } from './redis.js';

/**
 * Holds what a connection writes until the promise callbacks queued now have run, then sends it in one
 * write: commands issued back to back (a tool result, then BullMQ's completion of its job) reach
 * Redis together and cost it one wake-up (a read, a reply, an AOF write) instead of one each.
 * Their order is the order they were issued, as without it; nothing waits for I/O or a timer.
 * Nothing to do on a Redis Cluster (its commands go out on several connections) or while the
 * connection has no socket (commands wait in ioredis's offline queue then).
 */
export function batchWritesThisTick(client: RedisClient): void {
  if (isCluster(client)) return;
  const socket = client.stream;
  // Corked already: an earlier call holds the writes and releases them at its end.
  if (!socket || socket.writableCorked > 0 || socket.destroyed) return;
  socket.cork();
  // After the promise callbacks queued now have run (BullMQ's completion of the job is one), before any I/O.
  process.nextTick(() => socket.uncork());
}

import type { Socket } from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { batchWritesThisTick } from '@agentq/shared';

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());

/** Records the writes the connection's socket hands to the OS: one entry per write, its commands' names. */
function recordWrites(socket: Socket) {
  const writes: string[][] = [];
  const names = (data: unknown) => [...String(data).matchAll(/\*\d+\r\n\$\d+\r\n(set|get|ping|echo)\r\n/gi)].map((m) => m[1].toUpperCase());
  const s = socket as unknown as { _write: (...a: unknown[]) => void; _writev: (chunks: { chunk: unknown }[], cb: () => void) => void };
  const write = s._write.bind(socket);
  const writev = s._writev.bind(socket);
  s._write = (chunk, ...rest) => {
    writes.push(names(chunk));
    write(chunk, ...rest);
  };
  s._writev = (chunks, cb) => {
    writes.push(chunks.flatMap((c) => names(c.chunk)));
    writev(chunks, cb);
  };
  return { writes, stop: () => Object.assign(s, { _write: write, _writev: writev }) };
}

/** SET, then a few promise callbacks later (as BullMQ's completion follows a tool result) a GET of the same key. */
async function backToBack(key: string, batch: boolean) {
  if (batch) batchWritesThisTick(redis);
  const first = redis.set(key, '1');
  for (let i = 0; i < 5; i++) await Promise.resolve();
  const second = redis.get(key);
  return Promise.all([first, second]);
}

describe('batchWritesThisTick', () => {
  it('sends a command and the one issued after it in one write, in order', async () => {
    await redis.ping();
    const key = `wb${Date.now()}`;
    const rec = recordWrites(redis.stream);
    try {
      // The GET sent after the SET reads what the SET wrote: order is kept.
      expect(await backToBack(key, true)).toEqual(['OK', '1']);
      expect(await backToBack(`${key}x`, false)).toEqual(['OK', '1']);
    } finally {
      rec.stop();
      await redis.del(key, `${key}x`);
    }
    // Batched, both leave in one write; without it, each in its own.
    expect(rec.writes).toEqual([['SET', 'GET'], ['SET'], ['GET']]);
  });

  it('holds nothing past the tick, and a second call while a batch is open opens none', async () => {
    await redis.ping();
    batchWritesThisTick(redis);
    expect(redis.stream.writableCorked).toBe(1);
    batchWritesThisTick(redis);
    expect(redis.stream.writableCorked).toBe(1);
    // Awaited inside the batch, a command is still sent and answered.
    expect(await redis.echo('inside')).toBe('inside');
    expect(redis.stream.writableCorked).toBe(0);
  });
});

import { afterAll, describe, expect, inject, it } from 'vitest';
import { createRedis, type Redis } from '@agentq/shared/infra';
import { recordWrites } from './fixtures/socket-writes.js';

// A connection as agentq's workers open theirs.
const redis = createRedis(inject('redisUrl'), { name: 'write-batch-test', blocking: true }) as Redis;
afterAll(() => redis.disconnect());

/** SET, then a few promise callbacks later (as BullMQ's completion follows a tool result) a GET of the same key. */
async function backToBack(key: string) {
  const first = redis.set(key, '1');
  for (let i = 0; i < 5; i++) await Promise.resolve();
  const second = redis.get(key);
  return Promise.all([first, second]);
}

/** SET and GET back to back (see backToBack) leave the connection's socket in one write, in order. */
async function expectBackToBackInOneWrite() {
  const key = `wb${Date.now()}`;
  const rec = recordWrites(redis.stream);
  try {
    // The GET sent after the SET reads what the SET wrote: order is kept.
    expect(await backToBack(key)).toEqual(['OK', '1']);
  } finally {
    rec.stop();
    await redis.del(key);
  }
  expect(rec.writes).toEqual([['SET', 'GET']]);
}

/** Resolves once the event loop has finished its current turn and begun the next one. */
const nextTurn = () => new Promise((r) => setTimeout(r, 1));

describe('a Redis connection writes in bursts', () => {
  it('sends a command and the one issued after it in one write, in order', async () => {
    await redis.ping();
    await nextTurn();
    await expectBackToBackInOneWrite();
  });

  it("sends what the rest of a turn writes, from separate callbacks, in one write at the turn's end", async () => {
    await redis.ping();
    await nextTurn();
    const rec = recordWrites(redis.stream);
    const replies: Promise<string>[] = [];
    try {
      // Ten callbacks of one turn, as ten runs' model answers arriving in one poll.
      await new Promise<void>((done) => {
        for (let i = 0; i < 10; i++) setImmediate(() => replies.push(redis.echo(`e${i}`)));
        setImmediate(done);
      });
      expect(await Promise.all(replies)).toEqual(Array.from({ length: 10 }, (_, i) => `e${i}`));
    } finally {
      rec.stop();
    }
    // The first leaves at once (one run at a time waits for nothing); the nine others together.
    expect(rec.writes).toEqual([['ECHO'], Array(9).fill('ECHO')]);
  });

  it('holds the rest of a turn only until the turn ends', async () => {
    await redis.ping();
    await nextTurn();
    let held: Promise<string> | undefined;
    let corked = -1;
    await new Promise<void>((done) => {
      setImmediate(() => void redis.echo('first'));
      setImmediate(() => {
        held = redis.echo('held');
        corked = redis.stream.writableCorked;
        done();
      });
    });
    expect(corked).toBe(1);
    expect(await held).toBe('held');
    expect(redis.stream.writableCorked).toBe(0);
  });

  it('writes in bursts again on the socket of a reconnection', async () => {
    await redis.ping();
    const before = redis.stream;
    redis.disconnect(true);
    await new Promise((r) => redis.once('ready', r));
    expect(redis.stream).not.toBe(before);
    await nextTurn();
    await expectBackToBackInOneWrite();
  });
});

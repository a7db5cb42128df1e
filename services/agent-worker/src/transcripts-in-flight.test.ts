import { describe, expect, it } from 'vitest';
import { TranscriptsInFlight } from './transcripts-in-flight.js';

const settled = async <T>(p: Promise<T>) => {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('TranscriptsInFlight', () => {
  it('grants room at once while it lasts, then in the order asked: a large request is not passed over by smaller ones', async () => {
    const room = new TranscriptsInFlight(100);
    const a = await room.take(60);
    const large = room.take(80);
    const small = room.take(10);
    // 10 would fit beside 60, but the 80 asked first.
    expect(await settled(large)).toBe(false);
    expect(await settled(small)).toBe(false);
    expect(room.stats()).toEqual({ held: 60, waiting: 2 });
    a.release();
    const l = await large;
    const s = await small;
    expect(room.stats()).toEqual({ held: 90, waiting: 0 });
    l.release();
    s.release();
    expect(room.stats()).toEqual({ held: 0, waiting: 0 });
  });

  it('gives back what a step no longer needs when it shrinks its room, and takes more without waiting', async () => {
    const room = new TranscriptsInFlight(100);
    const a = await room.take(100);
    const b = room.take(50);
    a.resize(40);
    const got = await b;
    expect(room.stats().held).toBe(90);
    // A round's messages appended after the read: held even past the capacity.
    got.resize(70);
    expect(room.stats().held).toBe(110);
    a.release();
    a.release();
    got.release();
    expect(room.stats()).toEqual({ held: 0, waiting: 0 });
  });

  it('stops waiting when the signal aborts, and lets the next in line go', async () => {
    const room = new TranscriptsInFlight(100);
    const a = await room.take(50);
    const ctl = new AbortController();
    const aborted = room.take(100, ctl.signal);
    const next = room.take(50);
    ctl.abort(new Error('cancelled'));
    await expect(aborted).rejects.toThrow('cancelled');
    const n = await next;
    expect(room.stats()).toEqual({ held: 100, waiting: 0 });
    a.release();
    n.release();
    await expect(room.take(1, ctl.signal)).rejects.toThrow('cancelled');
  });

  it('refuses more than its capacity: such a request could never be granted', async () => {
    await expect(new TranscriptsInFlight(100).take(101)).rejects.toThrow(RangeError);
  });
});

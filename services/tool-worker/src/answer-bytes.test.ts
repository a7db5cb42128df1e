import { describe, expect, it } from 'vitest';
import { AnswerBytesInFlight } from './answer-bytes.js';

const pending = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return !done;
};

describe('AnswerBytesInFlight', () => {
  it('lets readers read on while the bound holds; past it only the reader that began holding first reads on', async () => {
    const bytes = new AnswerBytesInFlight(100, 1000);
    const [a, b, c] = [bytes.reader(), bytes.reader(), bytes.reader()];
    await a.charge(40);
    await b.charge(40);
    // c passes the bound: it waits; a, the first holder, still reads on, even past the bound.
    const cWaits = c.charge(60);
    expect(await pending(cWaits)).toBe(true);
    await a.charge(50);
    const bWaits = b.charge(10);
    expect(await pending(bWaits)).toBe(true);
    expect(bytes.stats()).toMatchObject({ held: 200, readers: 3 });
    // a's message is handed on: b is now the first holder, and reads on; c (110 held) still waits.
    a.free();
    await bWaits;
    expect(await pending(cWaits)).toBe(true);
    b.free();
    await cWaits;
    c.close();
    expect(bytes.stats()).toEqual({ held: 0, readers: 0, peak: 200 });
  });

  it('holds at most one message per reader: the rest of a message over the limit is counted, not kept', async () => {
    const bytes = new AnswerBytesInFlight(100, 30);
    const a = bytes.reader();
    await a.charge(25);
    await a.charge(25);
    expect(bytes.stats().held).toBe(30);
    a.free();
    expect(bytes.stats().held).toBe(0);
  });

  it('ends a closed reader’s wait at once and frees what it held, letting the others read on', async () => {
    const bytes = new AnswerBytesInFlight(50, 1000);
    const [a, b] = [bytes.reader(), bytes.reader()];
    await a.charge(60);
    const bWaits = b.charge(10);
    expect(await pending(bWaits)).toBe(true);
    b.close();
    await bWaits;
    a.close();
    expect(bytes.stats()).toMatchObject({ held: 0, readers: 0 });
    // A closed reader charges nothing more.
    await b.charge(100);
    expect(bytes.stats().held).toBe(0);
  });

  it('ends a wait after maxWaitMs: a first holder whose server stalls holds the others back only that long', async () => {
    const bytes = new AnswerBytesInFlight(50, 1000, 50);
    const [stalled, b] = [bytes.reader(), bytes.reader()];
    await stalled.charge(60);
    const started = Date.now();
    await b.charge(10);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    b.close();
    stalled.close();
    expect(bytes.stats()).toMatchObject({ held: 0, readers: 0 });
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { HIT_CONTEXT_CHARS, HIT_MATCH_CHARS, SearchThreads, type SearchJob } from './search-threads.js';

const pools: SearchThreads[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
const pool = (size = 2, timeoutMs = 20_000) => {
  const p = new SearchThreads({ size, timeoutMs });
  pools.push(p);
  return p;
};
const job = (pattern: string, docs: Array<[string, string]>, maxHits = 1000, timeoutMs = 20_000): SearchJob => ({
  pattern,
  maxHits,
  documents: docs.length,
  read: async (i) => ({ name: docs[i][0], text: docs[i][1] }),
  timeoutMs,
});

// Slow for RE2, though linear: a 1,000-fold counted repeat that keeps almost every state of
// its automaton alive, over 1 MB with a Q every 100 characters (≈ 4 s here).
const slowPattern = '[^Q]{1000}Q';
const slowText = `${'abcdefghi'.repeat(11)}Q`.repeat(10_000);

describe('context_search threads', () => {
  it('finish the catastrophic pattern over a megabyte at once (it stalls a backtracking engine for ever)', async () => {
    const text = `${'a'.repeat(1_000_000)}b`;
    const r = await pool().search(
      job('(a+)+b', [
        ['a.txt', 'a'.repeat(1_000_000)],
        ['b.txt', text],
      ]),
    );
    expect(r).toEqual({
      kind: 'hits',
      hits: [{ name: 'b.txt', offset: 0, text: text.slice(0, HIT_MATCH_CHARS + HIT_CONTEXT_CHARS) }],
    });
  });

  it('give character offsets into the document, as JavaScript strings count them', async () => {
    const docs: Array<[string, string]> = [
      ['accents.md', 'héllo wörld, wœrld; naïve world'],
      ['astral.md', '😀 world 𝕏 wörld 😀😀 world'],
      ['cjk.md', '世界 world 世界 wörld'],
    ];
    const r = await pool().search(job('w.rld', docs));
    expect(r.kind).toBe('hits');
    if (r.kind !== 'hits') return;
    // The same offsets as JavaScript's own regex finds them (u: a dot takes a whole code point).
    const expected = docs.flatMap(([name, text]) =>
      [...text.matchAll(/w.rld/gu)].map((m) => ({ name, offset: m.index })),
    );
    expect(r.hits.map((h) => ({ name: h.name, offset: h.offset }))).toEqual(expected);
    expect(expected.length).toBe(8);
    for (const h of r.hits) {
      const text = docs.find(([n]) => n === h.name)![1];
      expect(text.slice(h.offset, h.offset + 5)).toMatch(/^w.rld/u);
      expect(text.slice(Math.max(0, h.offset - HIT_CONTEXT_CHARS))).toContain(h.text);
    }
    // A code point outside the BMP is two units: offsets after it move by two.
    const astral = r.hits.filter((h) => h.name === 'astral.md').map((h) => h.offset);
    expect(astral).toEqual([3, 12, 23]);
  });

  it('stop at max_hits across documents, in document order', async () => {
    const docs: Array<[string, string]> = [
      ['one', 'x x x'],
      ['two', 'x x x'],
    ];
    const r = await pool().search(job('x', docs, 4));
    expect(r).toMatchObject({
      kind: 'hits',
      hits: [
        { name: 'one', offset: 0 },
        { name: 'one', offset: 2 },
        { name: 'one', offset: 4 },
        { name: 'two', offset: 0 },
      ],
    });
    const empty = await pool().search(job('y*', [['e', 'ab']], 10));
    // Empty matches step forward as JavaScript's do: one at each position.
    expect(empty).toMatchObject({ kind: 'hits', hits: [{ offset: 0 }, { offset: 1 }, { offset: 2 }] });
  });

  it('cut a long match in a hit to its first characters, keeping the context around', async () => {
    const text = `before ${'m'.repeat(5_000)} after`;
    const r = await pool().search(job('m+', [['long', text]]));
    expect(r).toEqual({
      kind: 'hits',
      hits: [
        {
          name: 'long',
          offset: 7,
          text: `before ${'m'.repeat(HIT_MATCH_CHARS)}`.padEnd(7 + HIT_MATCH_CHARS + HIT_CONTEXT_CHARS, 'm'),
        },
      ],
    });
  });

  it('refuse what RE2 cannot run in linear time, naming it; lookbehind is fine', async () => {
    const p = pool();
    expect(await p.search(job('(a)\\1', [['d', 'aa']]))).toEqual({
      kind: 'invalid',
      message: expect.stringContaining('\\1'),
    });
    expect(await p.search(job('a(?=b)', [['d', 'ab']]))).toEqual({
      kind: 'invalid',
      message: expect.stringContaining('(?='),
    });
    expect(await p.search(job('(', [['d', 'ab']]))).toEqual({
      kind: 'invalid',
      message: expect.stringContaining('missing closing )'),
    });
    expect(await p.search(job('(?<=a)b', [['d', 'ab cb']]))).toMatchObject({ kind: 'hits', hits: [{ offset: 1 }] });
  });

  it('stop a search at its deadline, and the next search gets a fresh thread', async () => {
    const p = pool(1);
    expect(await p.search(job(slowPattern, [['slow', slowText]], 10, 200))).toEqual({
      kind: 'timeout',
      started: true,
      timeoutMs: 200,
    });
    expect(await p.search(job('c', [['d', 'abc']]))).toMatchObject({ kind: 'hits', hits: [{ offset: 2 }] });
  });

  it('let searches wait for a busy thread, and give up waiting at the deadline', async () => {
    const p = pool(1, 1_500);
    const slow = p.search(job(slowPattern, [['slow', slowText.repeat(2)]], 10));
    const waiter = p.search(job('c', [['d', 'abc']], 10, 100));
    expect(await waiter).toEqual({ kind: 'timeout', started: false, timeoutMs: 100 });
    expect(await slow).toEqual({ kind: 'timeout', started: true, timeoutMs: 1_500 });
    // Queued behind a finished search, a search runs.
    const [a, b] = await Promise.all([p.search(job('a', [['d', 'abc']])), p.search(job('b', [['d', 'abc']]))]);
    expect([a, b]).toMatchObject([
      { kind: 'hits', hits: [{ offset: 0 }] },
      { kind: 'hits', hits: [{ offset: 1 }] },
    ]);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chunkDocument, parseChunkId } from './context-store.js';

describe('chunkDocument', () => {
  it('covers every document with fixed windows that overlap by exactly overlap_chars', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 20_000 }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.integer({ min: 0, max: 4_999 }),
        (chars, maxChars, overlapRaw) => {
          const overlap = overlapRaw % maxChars;
          const chunks = chunkDocument(0, 'doc', chars, maxChars, overlap);
          expect(chunks[0].offset).toBe(0);
          // The last chunk reaches the end: no gap at the end.
          const last = chunks.at(-1)!;
          expect(last.offset + last.length).toBe(chars);
          const bad = chunks.findIndex((c, i) => {
            const id = parseChunkId(c.id);
            if (!id || id.offset !== c.offset || id.length !== c.length) return true;
            if (i === chunks.length - 1) return c.length > maxChars;
            // Every chunk but the last is exactly max_chars long, and consecutive chunks overlap
            // by exactly overlap_chars (so there is no gap either).
            return c.length !== maxChars || c.offset + c.length - chunks[i + 1].offset !== overlap;
          });
          expect(bad, JSON.stringify(chunks[bad])).toBe(-1);
          // No chunk is wholly inside the previous one (no useless trailing chunk).
          if (chunks.length > 1)
            expect(last.offset + last.length).toBeGreaterThan(chunks.at(-2)!.offset + chunks.at(-2)!.length);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('rejects an overlap as large as the window', () => {
    expect(() => chunkDocument(0, 'd', 100, 10, 10)).toThrow(/overlap_chars/);
    expect(() => chunkDocument(0, 'd', 100, 0, 0)).toThrow(/max_chars/);
  });

  it('reassembles the text exactly from chunks without overlap', () => {
    const text = 'héllo wörld 🌍 '.repeat(1000);
    const chunks = chunkDocument(0, 'd', text.length, 777, 0);
    expect(chunks.map((c) => text.slice(c.offset, c.offset + c.length)).join('')).toBe(text);
  });
});

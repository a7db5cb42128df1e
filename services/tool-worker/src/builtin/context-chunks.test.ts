import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { chunkByUnits } from './context-chunks.js';
import { textUnits, type ChunkUnitKind } from './context-units.js';

// Real documents: this repository's README and API guide, and a JSON export.
const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');
const guide = readFileSync(new URL('../../../../docs/api-guide.md', import.meta.url), 'utf8');
const contacts = Array.from({ length: 120 }, (_, i) => ({
  id: `c${i}`,
  name: `Contact ${i}`,
  company: i % 3 ? 'EPAM' : 'Acme, "Inc."',
  notes: 'x'.repeat((i * 37) % 400),
  tags: [`t${i % 5}`, { nested: [i, { deep: '}]' }] }],
}));
const exportJson = JSON.stringify({ exported_at: '2026-11-28', contacts, count: 120 }, null, 2);
const arrayJson = JSON.stringify(contacts, null, 2);

/** Checks the chunks of `text`: in order, no gap, within max_chars, cut only between units unless a unit alone is too big. */
function expectWholeUnits(text: string, kind: ChunkUnitKind, maxChars: number) {
  const units = textUnits(text, kind);
  const chunks = chunkByUnits(0, 'doc', text, kind, maxChars);
  const bounds = new Set(units.flatMap((u) => [u.start, u.end]));
  const big = units.filter((u) => u.end - u.start > maxChars);
  const insideBig = (at: number) => big.some((u) => at > u.start && at < u.end);
  expect(chunks[0]!.offset).toBe(0);
  for (const [k, c] of chunks.entries()) {
    expect(c.length).toBeLessThanOrEqual(maxChars);
    expect(c.id).toBe(`d0:${c.offset}:${c.length}`);
    if (k > 0) expect(c.offset).toBe(chunks[k - 1]!.offset + chunks[k - 1]!.length);
    for (const at of [c.offset, c.offset + c.length])
      expect(bounds.has(at) || insideBig(at), `${kind} cut at ${at}`).toBe(true);
  }
  expect(chunks.at(-1)!.offset + chunks.at(-1)!.length).toBe(text.length);
  return { units, chunks };
}

describe('context_chunks by structure', () => {
  it('by markdown: whole sections, each chunk titled with its heading path; no heading inside a code block', () => {
    const { units, chunks } = expectWholeUnits(guide, 'markdown', 4000);
    expect(units.length).toBeGreaterThan(20);
    const section = units.find((u) => guide.slice(u.start).startsWith('### Saved agents'))!;
    expect(section.title).toBe('API guide > Agents and models > Saved agents');
    expect(units.every((u) => !u.title?.includes('202, Location'))).toBe(true);
    expect(chunks.every((c) => typeof c.title === 'string')).toBe(true);
    const two = textUnits(readme, 'markdown').find((u) => readme.slice(u.start).startsWith('## Two commands'))!;
    expect(two.title).toBe('agentq > Two commands');
  });

  it('by markdown: setext headings and closing #s; a preamble without a title', () => {
    const text = 'intro\n\nTitle\n=====\n\ntext\n\nPart\n----\n\n### Deep ###\nbody\n```\n# not a heading\n```\n';
    expect(textUnits(text, 'markdown').map((u) => [text.slice(u.start, u.end).split('\n')[0], u.title])).toEqual([
      ['intro', ''],
      ['Title', 'Title'],
      ['Part', 'Title > Part'],
      ['### Deep ###', 'Title > Part > Deep'],
    ]);
  });

  it('by json: top-level members of an object, or items of an array, never cut inside one', () => {
    const { chunks } = expectWholeUnits(arrayJson, 'json', 2000);
    expect(chunks.length).toBeGreaterThan(5);
    expect(chunks[0]!.title).toMatch(/^\[0\.\.\d+\]$/);
    // Every chunk but the first starts with whole items: the text after it parses as their array.
    for (const c of chunks.slice(1, -1)) {
      const items = arrayJson
        .slice(c.offset, c.offset + c.length)
        .trim()
        .replace(/,$/, '');
      expect(() => JSON.parse(`[${items}]`)).not.toThrow();
    }
    const members = textUnits(exportJson, 'json').map((u) => u.title);
    expect(members).toEqual(['exported_at', 'contacts', 'count']);
    // "contacts" alone is larger than max_chars: it is cut as chars cuts, each piece titled.
    const { chunks: cut } = expectWholeUnits(exportJson, 'json', 3000);
    expect(cut.filter((c) => c.title === 'contacts').length).toBeGreaterThan(2);
    expect(() => textUnits('{"a": [1, 2}', 'json')).toThrow(RangeError);
  });

  it('by lines and by paragraphs: whole lines, whole paragraphs', () => {
    expectWholeUnits(readme, 'lines', 500);
    const { units } = expectWholeUnits(readme, 'paragraphs', 1500);
    for (const u of units.slice(1)) expect(readme[u.start - 1]).toBe('\n');
    expect(textUnits('a\nb\n\n\nc\n', 'paragraphs').map((u) => u.end)).toEqual([6, 8]);
  });

  it('repeats whole units as overlap, never cutting one', () => {
    const chunks = chunkByUnits(0, 'doc', readme, 'lines', 800, 200);
    for (const [k, c] of chunks.entries()) {
      if (k === 0) continue;
      const prev = chunks[k - 1]!;
      expect(c.offset).toBeGreaterThan(prev.offset);
      expect(c.offset).toBeLessThanOrEqual(prev.offset + prev.length);
      expect(prev.offset + prev.length - c.offset).toBeLessThanOrEqual(200);
      expect(c.offset === 0 || readme[c.offset - 1] === '\n').toBe(true);
    }
  });
});

import { chunkDocument, chunkId, type Chunk } from '@agentq/shared/store';
import { textUnits, type ChunkUnitKind, type TextUnit } from './context-units.js';

/** A chunk of a document; `title` says where it is (a markdown section's heading path, JSON items). */
export type TitledChunk = Chunk & { title?: string };

/** The title of a chunk of units `first..last`: the first section's heading path, or the JSON items it holds. */
function titleOf(kind: ChunkUnitKind, first: TextUnit, last: TextUnit): string | undefined {
  if (kind === 'markdown') return first.title ?? '';
  if (kind !== 'json' || first.title === undefined) return undefined;
  if (first === last) return first.title;
  const index = (t: string | undefined) => (t && /^\[\d+\]$/.test(t) ? t.slice(1, -1) : null);
  const [a, b] = [index(first.title), index(last.title)];
  return a !== null && b !== null ? `[${a}..${b}]` : `${first.title} … ${last.title}`;
}

/**
 * Chunks of a document cut only between its units (see textUnits): each chunk as many whole
 * units as fit in `maxChars`; a unit alone larger is cut as `chars` cuts (fixed windows, the
 * overlap kept), each piece with its unit's title. With `overlapChars`, a chunk starts with the
 * whole units at the end of the one before that fit in it (and leave room for a unit of its
 * own): units are repeated, never cut. Every chunk holds at least one unit of its own, so the
 * chunks cover the document in order.
 */
export function chunkByUnits(
  docIndex: number,
  name: string,
  text: string,
  kind: ChunkUnitKind,
  maxChars: number,
  overlapChars = 0,
): TitledChunk[] {
  const units = textUnits(text, kind);
  if (!units.length) return chunkDocument(docIndex, name, 0, maxChars, overlapChars);
  const chunks: TitledChunk[] = [];
  const size = (u: TextUnit) => u.end - u.start;
  const push = (offset: number, length: number, title: string | undefined) =>
    chunks.push({
      id: chunkId(docIndex, offset, length),
      name,
      offset,
      length,
      ...(title !== undefined ? { title } : {}),
    });
  for (let i = 0; i < units.length; ) {
    const unit = units[i]!;
    if (size(unit) > maxChars) {
      for (const piece of chunkDocument(docIndex, name, size(unit), maxChars, overlapChars))
        push(unit.start + piece.offset, piece.length, titleOf(kind, unit, unit));
      i++;
      continue;
    }
    let first = i;
    if (overlapChars > 0 && chunks.length) {
      let back = 0;
      for (let p = i - 1; p >= 0; p--) {
        const n = size(units[p]!);
        if (n > maxChars || back + n > overlapChars || back + n + size(unit) > maxChars) break;
        back += n;
        first = p;
      }
    }
    let end = i + 1;
    while (end < units.length && units[end]!.end - units[first]!.start <= maxChars) end++;
    const last = units[end - 1]!;
    push(units[first]!.start, last.end - units[first]!.start, titleOf(kind, unit, last));
    i = end;
  }
  return chunks;
}

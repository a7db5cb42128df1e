import type { RedisClient } from '../infra/redis.js';
import { runKeys } from './keys.js';

/** A context document as the API receives it. */
export interface ContextDoc {
  name: string;
  text: string;
}

export interface ContextMeta {
  documents: Array<{ name: string; chars: number }>;
  block: number;
}

// Documents are stored in blocks of characters (not bytes), so a slice by character offset
// reads only the blocks it needs, whatever the text's encoding.
const BLOCK_CHARS = 65_536;

/** Stores and reads a run's context, apart from its prompt, under the run's keys. */
export class ContextStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private key(runId: string) {
    return runKeys(this.prefix, runId).context;
  }

  async put(runId: string, docs: ContextDoc[]): Promise<void> {
    const meta: ContextMeta = {
      documents: docs.map((d) => ({ name: d.name, chars: d.text.length })),
      block: BLOCK_CHARS,
    };
    const fields: string[] = ['meta', JSON.stringify(meta)];
    docs.forEach((d, i) => {
      for (let b = 0, off = 0; off < d.text.length || b === 0; b++, off += BLOCK_CHARS)
        fields.push(`${i}:${b}`, d.text.slice(off, off + BLOCK_CHARS));
    });
    await this.redis.hset(this.key(runId), ...fields);
  }

  async meta(runId: string): Promise<ContextMeta | null> {
    const raw = await this.redis.hget(this.key(runId), 'meta');
    return raw ? JSON.parse(raw) : null;
  }

  /** Characters [offset, offset+length) of document `doc`. */
  async read(runId: string, meta: ContextMeta, doc: number, offset: number, length: number): Promise<string> {
    const chars = meta.documents[doc].chars;
    const start = Math.max(0, Math.min(offset, chars));
    const end = Math.max(start, Math.min(offset + length, chars));
    if (end === start) return '';
    const first = Math.floor(start / meta.block);
    const last = Math.floor((end - 1) / meta.block);
    const fields = Array.from({ length: last - first + 1 }, (_, i) => `${doc}:${first + i}`);
    const blocks = await this.redis.hmget(this.key(runId), ...fields);
    return blocks.join('').slice(start - first * meta.block, end - first * meta.block);
  }

  /** A whole document (for searching). */
  async readAll(runId: string, meta: ContextMeta, doc: number): Promise<string> {
    return this.read(runId, meta, doc, 0, meta.documents[doc].chars);
  }
}

/** One fixed window over a document. */
export interface Chunk {
  id: string;
  name: string;
  offset: number;
  length: number;
}

/**
 * Fixed windows over character offsets: every chunk but a document's last is exactly
 * `maxChars` long, consecutive chunks overlap by exactly `overlapChars`, and together they
 * cover the document with no gap.
 */
export function chunkDocument(
  docIndex: number,
  name: string,
  chars: number,
  maxChars: number,
  overlapChars = 0,
): Chunk[] {
  if (!Number.isInteger(maxChars) || maxChars < 1) throw new RangeError('max_chars must be a positive integer');
  if (!Number.isInteger(overlapChars) || overlapChars < 0 || overlapChars >= maxChars)
    throw new RangeError('overlap_chars must be an integer from 0 to max_chars - 1');
  const step = maxChars - overlapChars;
  const chunks: Chunk[] = [];
  for (let offset = 0; ; offset += step) {
    const length = Math.min(maxChars, chars - offset);
    chunks.push({ id: chunkId(docIndex, offset, length), name, offset, length: Math.max(0, length) });
    if (offset + maxChars >= chars) break;
  }
  return chunks;
}

export function chunkId(docIndex: number, offset: number, length: number): string {
  return `d${docIndex}:${offset}:${length}`;
}

export function parseChunkId(id: string): { doc: number; offset: number; length: number } | null {
  const m = /^d(\d+):(\d+):(\d+)$/.exec(id);
  return m ? { doc: Number(m[1]), offset: Number(m[2]), length: Number(m[3]) } : null;
}

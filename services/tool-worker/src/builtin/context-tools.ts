import { toolFailed, toolOk, type ToolOutcome } from '@agentq/shared/core';
import { chunkDocument, type Chunk, type ContextMeta, type ContextStore } from '@agentq/shared/store';
import { z } from 'zod';
import { chunkByUnits, type TitledChunk } from './context-chunks.js';
import type { ChunkUnitKind } from './context-units.js';
import { runContextSearch } from './context-search.js';
import type { SearchThreads } from './search-threads.js';

const MAX_CHUNKS = 10_000;
const MAX_READ = 100_000;

const readArgs = z.strictObject({
  name: z.string().optional(),
  offset: z.number().int().min(0),
  length: z.number().int().min(1).max(MAX_READ),
});
const chunkArgs = z.strictObject({
  max_chars: z.number().int().min(1),
  overlap_chars: z.number().int().min(0).default(0),
  name: z.string().optional(),
  /** `chars`: fixed windows; the others cut only between units (see context-chunks.ts). */
  by: z.enum(['chars', 'lines', 'paragraphs', 'markdown', 'json']).default('chars'),
});

const ok = (value: unknown): ToolOutcome => toolOk(typeof value === 'string' ? value : JSON.stringify(value));
const invalid = (why: string): ToolOutcome => toolFailed('invalid_arguments', why);
const refused = (why: string): ToolOutcome => toolFailed('refused', why);

function docIndex(meta: ContextMeta, name: string | undefined): number {
  if (name === undefined) return 0;
  return meta.documents.findIndex((d) => d.name === name);
}

/** What context_search runs on: the tool-worker's search threads, and the call's time limit. */
export interface ContextSearchOptions {
  threads: SearchThreads;
  timeoutMs: number;
}

/** Runs one of the context tools over the run's stored context. */
export async function runContextTool(
  tool: string,
  args: unknown,
  runId: string,
  contexts: ContextStore,
  search: ContextSearchOptions,
): Promise<ToolOutcome> {
  const meta = await contexts.meta(runId);
  if (!meta) return refused('this run has no context');
  const names = () => meta.documents.map((d) => d.name).join(', ');
  switch (tool) {
    case 'context_info':
      return ok({ documents: meta.documents, total_chars: meta.documents.reduce((n, d) => n + d.chars, 0) });
    case 'context_read': {
      const a = readArgs.safeParse(args);
      if (!a.success) return invalid(`invalid arguments: ${z.prettifyError(a.error)}`);
      const i = docIndex(meta, a.data.name);
      if (i < 0) return invalid(`no document named "${a.data.name}" (documents: ${names()})`);
      return ok(await contexts.read(runId, meta, i, a.data.offset, a.data.length));
    }
    case 'context_search':
      return runContextSearch(args, runId, meta, contexts, search);
    case 'context_chunks': {
      const a = chunkArgs.safeParse(args);
      if (!a.success) return invalid(`invalid arguments: ${z.prettifyError(a.error)}`);
      if (a.data.overlap_chars >= a.data.max_chars) return invalid('overlap_chars must be smaller than max_chars');
      const which = a.data.name === undefined ? meta.documents.map((_, i) => i) : [docIndex(meta, a.data.name)];
      if (which[0] < 0) return invalid(`no document named "${a.data.name}" (documents: ${names()})`);
      const { by } = a.data;
      if (by !== 'chars')
        return chunksByUnits(runId, meta, which, by, a.data.max_chars, a.data.overlap_chars, contexts);
      const chunks: Chunk[] = [];
      for (const i of which) {
        const d = meta.documents[i];
        const count = Math.ceil(
          Math.max(0, d.chars - a.data.overlap_chars) / (a.data.max_chars - a.data.overlap_chars),
        );
        if (chunks.length + count > MAX_CHUNKS)
          return refused(`that makes more than ${MAX_CHUNKS} chunks; use a larger max_chars`);
        chunks.push(...chunkDocument(i, d.name, d.chars, a.data.max_chars, a.data.overlap_chars));
      }
      return ok({ chunks });
    }
    default:
      return refused('unknown context tool');
  }
}

/** context_chunks by structure: each document read whole and cut between its units. */
async function chunksByUnits(
  runId: string,
  meta: ContextMeta,
  which: number[],
  by: ChunkUnitKind,
  maxChars: number,
  overlapChars: number,
  contexts: ContextStore,
): Promise<ToolOutcome> {
  const chunks: TitledChunk[] = [];
  for (const i of which) {
    const d = meta.documents[i]!;
    let made: TitledChunk[];
    try {
      made = chunkByUnits(i, d.name, await contexts.readAll(runId, meta, i), by, maxChars, overlapChars);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      return invalid(`the document "${d.name}" cannot be chunked by ${by}: it is ${err.message}`);
    }
    if (chunks.length + made.length > MAX_CHUNKS)
      return refused(`that makes more than ${MAX_CHUNKS} chunks; use a larger max_chars`);
    chunks.push(...made);
  }
  return ok({ chunks });
}

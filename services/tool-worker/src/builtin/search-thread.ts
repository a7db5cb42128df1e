// The entry of a context_search thread (see search-threads.ts): it runs a caller's regular
// expression over one document per message, off the tool-worker's event loop. It imports
// nothing of ours, so that it runs as it is both built and as TypeScript under the tests.
import { parentPort } from 'node:worker_threads';
import { RE2JS } from 're2js';

/** What the pool sends: one document to search. */
export interface SearchThreadRequest {
  pattern: string;
  name: string;
  text: string;
  maxHits: number;
  /** Characters of context on each side of a match in a hit's text. */
  around: number;
  /** The most characters of the match itself a hit's text carries. */
  maxMatchChars: number;
}

/** What the thread answers: the document's hits, or why the pattern does not compile. */
export type SearchThreadReply = { hits: Array<{ name: string; offset: number; text: string }> } | { invalid: string };

let compiled: { pattern: string; re: RE2JS } | undefined;

function search(req: SearchThreadRequest): SearchThreadReply {
  if (compiled?.pattern !== req.pattern) {
    try {
      // RE2: linear in the text, whatever the pattern (no backtracking). LOOKBEHINDS admits
      // (?<=…) and (?<!…), which RE2 runs in linear time too; lookahead and backreferences
      // have no linear-time form, so they do not compile.
      compiled = { pattern: req.pattern, re: RE2JS.compile(req.pattern, RE2JS.LOOKBEHINDS) };
    } catch (err) {
      return { invalid: (err as Error).message };
    }
  }
  const hits: Array<{ name: string; offset: number; text: string }> = [];
  // Match positions are indices into the JS string (UTF-16 units), like every offset of the
  // context tools; matchAll steps past empty matches itself.
  for (const m of compiled.re.matchAll(req.text)) {
    const at = m.index ?? 0; // typed optional as RegExpMatchArray's; matchAll always sets it
    const end = at + Math.min(m[0].length, req.maxMatchChars);
    hits.push({ name: req.name, offset: at, text: req.text.slice(Math.max(0, at - req.around), end + req.around) });
    if (hits.length >= req.maxHits) break;
  }
  return { hits };
}

parentPort?.on('message', (req: SearchThreadRequest) => parentPort!.postMessage(search(req)));

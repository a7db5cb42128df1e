import { toolFailed, toolOk, type ToolOutcome } from '@agentq/shared/core';
import { type ContextMeta, type ContextStore } from '@agentq/shared/store';
import { z } from 'zod';
import { toRe2Syntax } from './re2-syntax.js';
import type { SearchThreads } from './search-threads.js';

const searchArgs = z.strictObject({
  pattern: z.string().min(1).max(1000),
  max_hits: z.number().int().min(1).max(1000).default(20),
});

/**
 * `context_search {"pattern", "max_hits"?}` → `{"hits": [{"name", "offset", "text"}]}`: the
 * pattern (RE2 syntax) over every document in order, until `max_hits`; offsets are character
 * (UTF-16 unit) offsets into the document, as context_read takes them. The caller's pattern runs
 * on a search thread with a deadline, never on the tool-worker's event loop.
 */
export async function runContextSearch(
  args: unknown,
  runId: string,
  meta: ContextMeta,
  contexts: ContextStore,
  opts: { threads: SearchThreads; timeoutMs: number },
): Promise<ToolOutcome> {
  const a = searchArgs.safeParse(args);
  if (!a.success) return toolFailed('invalid_arguments', `invalid arguments: ${z.prettifyError(a.error)}`);
  const result = await opts.threads.search({
    pattern: toRe2Syntax(a.data.pattern),
    maxHits: a.data.max_hits,
    documents: meta.documents.length,
    read: async (doc) => ({ name: meta.documents[doc].name, text: await contexts.readAll(runId, meta, doc) }),
    timeoutMs: opts.timeoutMs,
  });
  switch (result.kind) {
    case 'hits':
      return toolOk(JSON.stringify({ hits: result.hits }));
    case 'invalid':
      return toolFailed(
        'invalid_arguments',
        `invalid regular expression: ${result.message} (patterns are RE2 syntax, which runs in linear time: ` +
          `no lookahead (?= ?!) and no backreferences \\1 \\k<name>)`,
      );
    case 'timeout':
      return toolFailed(
        'timeout',
        result.started
          ? `the search did not finish within ${result.timeoutMs} ms; search for something more specific`
          : `no search thread came free within ${result.timeoutMs} ms (other searches are running); try again`,
      );
    case 'failed':
      return toolFailed('server_error', result.message);
  }
}

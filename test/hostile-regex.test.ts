import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatRequest, Handler, Reply } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';

// Issue 16, finding 2: a caller's context_search pattern must not stall the tool-worker that
// every tenant's tool calls share. `(a+)+b` backtracks exponentially over a run of `a`s with no
// `b` after it: over this context (1 MB of prose around 31 `a`s) V8's engine holds the event
// loop for about a minute here (doubling with each further `a`; over 1 MB of `a`s, for ever).
const KEY_A = 'key-a-hostile-regex';
const KEY_B = 'key-b-hostile-regex';
const prose = 'the quick brown fox jumps over the lazy dog. '.repeat(11_500);
const bigText = `${prose}${'a'.repeat(31)} ${prose}aab`;

const firstUser = (req: ChatRequest) => req.messages.find((m) => m.role === 'user')?.content as string;
const round = (req: ChatRequest) => req.messages.filter((m) => m.role === 'assistant').length;
const toolMsgs = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool');
const echoTools = (req: ChatRequest): Reply => ({ content: JSON.stringify(toolMsgs(req).map((m) => m.content)) });

let searchHandedOut: () => void;
const searching = new Promise<void>((resolve) => (searchHandedOut = resolve));

const scripts: Record<string, (req: ChatRequest) => Reply | Promise<Reply>> = {
  'A: catastrophic search': (req) => {
    if (round(req) > 0) return echoTools(req);
    searchHandedOut();
    return { tool_calls: [{ name: 'context_search', arguments: { pattern: '(a+)+b', max_hits: 5 } }] };
  },
  'B: a tool call beside it': async (req) => {
    if (round(req) > 0) return { content: `B done: ${toolMsgs(req)[0].content}` };
    // B's call goes to the tool-worker once A's search has been handed to it.
    await searching;
    return { tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'bob' } }] };
  },
  'C: offsets': (req) =>
    round(req) > 0
      ? echoTools(req)
      : {
          tool_calls: [
            { name: 'context_search', arguments: { pattern: 'w.rld' } },
            { name: 'context_search', arguments: { pattern: '\\u00e9|(?<=\\s)\\p{Han}+' } },
            { name: 'context_search', arguments: { pattern: '(\\w)\\1' } },
          ],
        },
};
const handler: Handler = (req) => scripts[firstUser(req)]?.(req) ?? { content: 'no script' };

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ handler, env: { API_KEYS: `${KEY_A},${KEY_B}` } });
});
afterAll(async () => stack?.close());

describe('context_search with a hostile pattern', () => {
  // Deliberately far below the old engine's stall: with it the shared event loop is held past
  // this timeout (the test process runs these services) and the test fails. Now: about a second.
  it("stalls nothing: another tenant's tool call on the same tool-worker completes beside it, and the search finishes", {
    timeout: 15_000,
  }, async () => {
    const a = await stack.createRun(
      { input: 'A: catastrophic search', context: [{ name: 'big.txt', text: bigText }] },
      KEY_A,
    );
    const b = await stack.createRun({ input: 'B: a tool call beside it' }, KEY_B);
    const [aRun, bRun] = await Promise.all([
      stack.waitForRun(a.id, { key: KEY_A, timeoutMs: 15_000 }),
      stack.waitForRun(b.id, { key: KEY_B, timeoutMs: 15_000 }),
    ]);

    expect(bRun.status).toBe('completed');
    expect(bRun.output?.content).toMatch(/^B done: .*Bob Smith/);
    expect(aRun.status).toBe('completed');
    const [search] = JSON.parse(aRun.output!.content as string);
    // The only match is the `aab` at the very end; the 31 `a`s are no match, found in linear time.
    expect(JSON.parse(search)).toEqual({
      hits: [{ name: 'big.txt', offset: bigText.length - 3, text: bigText.slice(-83) }],
    });
  });

  it('gives character offsets into non-ASCII documents, and names what RE2 cannot run', async () => {
    const docs = [
      { name: 'accents.md', text: 'héllo wörld, wœrld; naïve world' },
      { name: 'astral.md', text: '😀 world 𝕏 wörld 世界 😀😀 world' },
    ];
    const run = await stack.waitForRun((await stack.createRun({ input: 'C: offsets', context: docs }, KEY_A)).id, {
      key: KEY_A,
    });
    expect(run.status).toBe('completed');
    const [dotted, escaped, backref] = JSON.parse(run.output!.content as string);
    const offsets = (text: string) =>
      (JSON.parse(text) as { hits: Array<{ name: string; offset: number }> }).hits.map((h) => [h.name, h.offset]);
    // Where JavaScript's own regex finds them in the strings that were sent.
    const where = (re: RegExp) => docs.flatMap((d) => [...d.text.matchAll(re)].map((m) => [d.name, m.index]));
    expect(offsets(dotted)).toEqual(where(/w.rld/gu));
    expect(offsets(dotted)).toEqual([
      ['accents.md', 6],
      ['accents.md', 13],
      ['accents.md', 26],
      ['astral.md', 3],
      ['astral.md', 12],
      ['astral.md', 26],
    ]);
    // JavaScript's \u escape is understood; lookbehind and \p{…} classes are RE2's too.
    expect(offsets(escaped)).toEqual(where(/\u00e9|(?<=\s)\p{Script=Han}+/gu));
    expect(backref).toMatch(/^Error executing context_search: invalid regular expression: .*\\1.*no backreferences/);
  });
});

import { describe, expect, it } from 'vitest';
import { parseSse, type SseMessage } from './sse.js';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch));
      c.close();
    },
  });
}

async function all(chunks: string[]): Promise<SseMessage[]> {
  const out: SseMessage[] = [];
  for await (const m of parseSse(streamOf(chunks))) out.push(m);
  return out;
}

describe('parseSse', () => {
  it('parses ids, types, multi-line data and retry; skips comments', async () => {
    expect(
      await all([
        ': keep-alive\n\n',
        'id: 1-0\nevent: run.queued\ndata: {"a":1}\n\n',
        'retry: 500\ndata: line 1\ndata: line 2\n\n',
      ]),
    ).toEqual([
      { id: '1-0', event: 'run.queued', data: '{"a":1}' },
      { id: '1-0', event: 'message', data: 'line 1\nline 2', retry: 500 },
    ]);
  });

  it('handles CRLF and CR line ends and events split across chunks anywhere', async () => {
    const text = 'id: 5-1\r\nevent: x\r\ndata: {"b":"é"}\r\n\r\nid: 6-0\revent: y\rdata:no-space\r\r';
    const expected = [
      { id: '5-1', event: 'x', data: '{"b":"é"}' },
      { id: '6-0', event: 'y', data: 'no-space' },
    ];
    expect(await all([text])).toEqual(expected);
    // Every split point, including between \r and \n and inside a multi-byte character.
    const bytes = new TextEncoder().encode(text);
    for (let i = 1; i < bytes.length; i++) {
      const s = new ReadableStream<Uint8Array>({
        start(c) {
          c.enqueue(bytes.slice(0, i));
          c.enqueue(bytes.slice(i));
          c.close();
        },
      });
      const out: SseMessage[] = [];
      for await (const m of parseSse(s)) out.push(m);
      expect(out, `split at ${i}`).toEqual(expected);
    }
  });

  it('does not dispatch an event without data, and drops an unterminated last event', async () => {
    expect(await all(['id: 1-0\n\n', 'event: z\ndata: 1'])).toEqual([]);
  });
});

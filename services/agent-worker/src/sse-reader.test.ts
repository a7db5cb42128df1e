import { describe, expect, it } from 'vitest';
import { SseReader, type SseEvent } from './sse-reader.js';

/**
 * Every event of `text` (a string, or bytes) fed to one reader in the pieces `cuts` (byte offsets) make, then
 * its end.
 */
function read(text: string | Buffer, cuts: number[] = []): SseEvent[] {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const reader = new SseReader();
  const out: SseEvent[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...reader.push(new Uint8Array(bytes.subarray(at, cut))));
    at = cut;
  }
  out.push(...reader.end());
  return out;
}

describe('SseReader', () => {
  it('reads data events, with or without the space after the colon, and their event field', () => {
    expect(read('data: {"a":1}\n\ndata:{"b":2}\n\nevent: error\ndata: {"c":3}\n\n')).toEqual([
      { event: undefined, data: '{"a":1}' },
      { event: undefined, data: '{"b":2}' },
      { event: 'error', data: '{"c":3}' },
    ]);
  });

  it('ends lines at \\r\\n and at \\r alone as at \\n', () => {
    const want = [
      { event: undefined, data: 'one' },
      { event: undefined, data: 'two' },
    ];
    expect(read('data: one\r\n\r\ndata: two\r\n\r\n')).toEqual(want);
    expect(read('data: one\r\rdata: two\r\r')).toEqual(want);
  });

  it('joins an event of several data lines with \\n, and skips comments, id and retry', () => {
    expect(read(': keep-alive\nid: 7\nretry: 100\ndata: a\ndata:\ndata: b\n\n')).toEqual([
      { event: undefined, data: 'a\n\nb' },
    ]);
  });

  it(
    'a blank line without data is no event; an event the stream ' +
      'ends in without its blank line (or its line end) still is',
    () => {
      expect(read('\n\nevent: ping\n\ndata: whole\n\ndata: last')).toEqual([
        { event: undefined, data: 'whole' },
        { event: undefined, data: 'last' },
      ]);
      expect(read('data: a\n\ndata: b\n')).toEqual([
        { event: undefined, data: 'a' },
        { event: undefined, data: 'b' },
      ]);
      expect(read('data: a\n\n')).toEqual([{ event: undefined, data: 'a' }]);
    },
  );

  it('drops a byte order mark that starts the stream', () => {
    expect(read(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('data: first\n\n')]))).toEqual([
      { event: undefined, data: 'first' },
    ]);
  });

  it(
    'reads the same events whichever bytes the chunks end at: ' +
      'inside a line, between \\r and \\n, inside a UTF-8 character',
    () => {
      const text = 'data: {"content":"héllo ✓ 🙂"}\r\n\r\ndata: [DONE]\r\n\r\n';
      const whole = read(text);
      expect(whole).toEqual([
        { event: undefined, data: '{"content":"héllo ✓ 🙂"}' },
        { event: undefined, data: '[DONE]' },
      ]);
      const length = Buffer.byteLength(text);
      for (let cut = 1; cut < length; cut++) expect(read(text, [cut])).toEqual(whole);
      // Every byte a chunk of its own, and an empty chunk between \r and \n.
      expect(
        read(
          text,
          Array.from({ length: length - 1 }, (_, i) => i + 1),
        ),
      ).toEqual(whole);
      expect(read('data: a\r\ndata: b\r\n\r\n', [8, 8])).toEqual([{ event: undefined, data: 'a\nb' }]);
    },
  );
});

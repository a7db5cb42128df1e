import { describe, expect, it } from 'vitest';
import { envelopeOf, LineReader, type Line } from './mcp-message-limit.js';

const feed = (reader: LineReader, ...chunks: string[]): Line[] => chunks.flatMap((c) => reader.push(Buffer.from(c)));

describe('LineReader', () => {
  it('splits lines across chunks and drops a trailing \\r', () => {
    const reader = new LineReader(100);
    expect(feed(reader, '{"a":', '1}\r\n{"b"', ':2}\n', '{"c":3')).toEqual([{ text: '{"a":1}' }, { text: '{"b":2}' }]);
    expect(feed(reader, '}\n')).toEqual([{ text: '{"c":3}' }]);
  });

  it('reads past a line over the limit, keeping its size, head and tail, and goes on', () => {
    const reader = new LineReader(1_000);
    const big = `{"result":{"text":"${'x'.repeat(200_000)}"},"jsonrpc":"2.0","id":7}`;
    const lines = feed(reader, 'before\n', big.slice(0, 70_000), big.slice(70_000), '\nafter\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({ text: 'before' });
    const o = (lines[1] as Extract<Line, { oversized: unknown }>).oversized;
    expect(o.bytes).toBe(Buffer.byteLength(big));
    expect(o.head.length).toBe(64 * 1024);
    expect(big.startsWith(o.head)).toBe(true);
    expect(big.endsWith(o.tail)).toBe(true);
    expect(o.tail).toMatch(/"id":7}$/);
    expect(lines[2]).toEqual({ text: 'after' });
  });

  it('holds no more than the limit of a line that never ends', () => {
    const reader = new LineReader(1_000);
    for (let i = 0; i < 100; i++) expect(reader.push(Buffer.alloc(100_000, 'y'))).toEqual([]);
    expect(feed(reader, '\n')).toEqual([
      { oversized: { bytes: 10_000_000, head: 'y'.repeat(64 * 1024), tail: 'y'.repeat(512) } },
    ]);
  });
});

describe('envelopeOf', () => {
  const of = (json: string) => envelopeOf({ head: json.slice(0, 60), tail: json.slice(-40) });

  it('finds the id written last (the TypeScript SDK) or first (other servers)', () => {
    expect(of(`{"result":{"content":[{"type":"text","text":"${'z'.repeat(100)}"}]},"jsonrpc":"2.0","id":12}`)).toEqual({
      id: 12,
      response: true,
    });
    expect(of(`{"jsonrpc":"2.0","id":"req-1","result":{"content":"${'z'.repeat(100)}"}}`)).toEqual({
      id: 'req-1',
      response: true,
    });
    expect(of(`{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"${'z'.repeat(100)}"}}`)).toEqual({
      id: 3,
      response: true,
    });
  });

  it('takes neither a nested id nor one inside a string, and tells requests from answers', () => {
    // "id" here is a key of the result, not of the message; the message's own id is cut off.
    expect(of(`{"result":{"id":99,"text":"a \\"id\\":5} ${'z'.repeat(100)}"},"jsonrpc":"2.0","id":4`)).toEqual({
      response: true,
    });
    expect(
      of(`{"method":"sampling/createMessage","params":{"x":"${'z'.repeat(100)}"},"jsonrpc":"2.0","id":8}`),
    ).toEqual({ id: 8, response: false });
    expect(of(`{"method":"notifications/message","params":{"data":"${'z'.repeat(100)}"},"jsonrpc":"2.0"}`)).toEqual({
      response: false,
    });
  });
});

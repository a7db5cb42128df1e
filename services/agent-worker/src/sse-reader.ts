/** One server-sent event: its `event` field, if it had one, and its `data` lines joined with `\n`. */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * Splits a server-sent event stream, bytes as they arrive, into its events, as the format
 * defines them: a line ends with `\n`, `\r\n` or `\r` (also where a chunk ends between `\r` and
 * `\n`); an event's `data` lines are joined with `\n`; a blank line ends it (one without data
 * is none); comments (`:`) and the `id` and `retry` fields are skipped; a byte order mark that
 * starts the stream is dropped. A line is decoded as UTF-8 once it is whole, so a character
 * split between two chunks is read whole. An event the stream ends in without its blank line is
 * still one (`end()`), as the SDK's reader has it: some servers leave that line out.
 *
 * One pass over each chunk, no per-event async step: the openai SDK's reader goes through three
 * async generators and a byte buffer that it copies at every chunk, which is a tenth of an
 * agent-worker's CPU under load (a profile of the benchmark's scenario 2), and its share grows
 * with the chunks of an answer (a provider sends one per token or so).
 */
export class SseReader {
  /** The bytes of a line that no chunk has ended yet. */
  private partial: Buffer[] = [];
  /** The last chunk ended with `\r`: a `\n` that starts the next one belongs to that line's end. */
  private afterCR = false;
  private data: string[] = [];
  private event: string | undefined;
  /** No byte read yet (a byte order mark may start the stream). */
  private atStart = true;

  /** The events that `chunk` completes, in order. */
  push(chunk: Uint8Array): SseEvent[] {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: SseEvent[] = [];
    if (buf.length === 0) return out;
    let start = this.afterCR && buf[0] === LF ? 1 : 0;
    if (this.atStart) {
      this.atStart = false;
      // (A mark split over the first chunks is not looked for: no server sends one that way.)
      if (buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) start = 3;
    }
    this.afterCR = false;
    // Most streams end lines with `\n` alone: found by indexOf. A `\r` anywhere takes the byte loop.
    const crlf = buf.indexOf(CR, start) !== -1;
    for (;;) {
      let end = crlf ? this.lineEnd(buf, start) : buf.indexOf(LF, start);
      if (end === -1) break;
      this.line(this.whole(buf, start, end), out);
      if (buf[end] === CR) {
        if (end + 1 === buf.length) this.afterCR = true;
        else if (buf[end + 1] === LF) end++;
      }
      start = end + 1;
    }
    if (start < buf.length) this.partial.push(buf.subarray(start));
    return out;
  }

  /** The events the end of the stream completes: its last line, and the event it was in. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    if (this.partial.length > 0) this.line(this.whole(Buffer.alloc(0), 0, 0), out);
    this.line('', out);
    return out;
  }

  private lineEnd(buf: Buffer, from: number): number {
    for (let i = from; i < buf.length; i++) if (buf[i] === LF || buf[i] === CR) return i;
    return -1;
  }

  /** The line that ends at `end` of `buf`, with the bytes of it earlier chunks held. */
  private whole(buf: Buffer, start: number, end: number): string {
    if (this.partial.length === 0) return buf.toString('utf8', start, end);
    this.partial.push(buf.subarray(start, end));
    const line = Buffer.concat(this.partial).toString('utf8');
    this.partial = [];
    return line;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0)
        out.push({ event: this.event, data: this.data.length === 1 ? this.data[0]! : this.data.join('\n') });
      this.data = [];
      this.event = undefined;
      return;
    }
    if (line.charCodeAt(0) === 0x3a) return; // a comment
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }
}

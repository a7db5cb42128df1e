/** One server-sent event as parsed (data not yet decoded from JSON). */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
  /** A `retry:` the server asked for, in ms. */
  retry?: number;
}

/**
 * Parses a `text/event-stream` body per the HTML standard: lines end in CRLF, LF or CR;
 * `data:` lines join with LF; comment lines (`:`) are skipped; an empty line dispatches.
 */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let data: string[] = [];
  let event = '';
  let id: string | undefined;
  let retry: number | undefined;
  const line = (l: string): SseMessage | null => {
    if (l === '') {
      const msg = data.length
        ? {
            ...(id !== undefined ? { id } : {}),
            event: event || 'message',
            data: data.join('\n'),
            ...(retry !== undefined ? { retry } : {}),
          }
        : null;
      data = [];
      event = '';
      retry = undefined;
      return msg;
    }
    if (l.startsWith(':')) return null;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data.push(value);
    else if (field === 'event') event = value;
    else if (field === 'id' && !value.includes('\0')) id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
    return null;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        // A CR held back as the possible start of a CRLF ends a line after all.
        const msg = buf.endsWith('\r') ? line(buf.slice(0, -1)) : null;
        if (msg) yield msg;
        return;
      }
      buf += value;
      // A CR at the very end may be the first half of a CRLF: wait for the next chunk.
      let start = 0;
      for (const m of buf.matchAll(/\r\n|\n|\r(?!$)/g)) {
        const msg = line(buf.slice(start, m.index));
        start = m.index + m[0].length;
        if (msg) yield msg;
      }
      buf = buf.slice(start);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

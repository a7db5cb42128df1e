import type { Readable } from 'node:stream';
import type { Logger } from 'pino';

const STDERR_MAX_LINE = 2048;
const STDERR_MAX_LINES_PER_WINDOW = 50;
const STDERR_WINDOW_MS = 10_000;
const STDERR_TAIL = 5;

/** Where a stdio server's stderr goes: its logger, and the last lines kept for error reports. */
export interface StderrSink {
  log: Logger;
  stderrTail: string[];
}

/** Logs a stdio server's stderr at debug, a line at most 2 KB, at most 50 lines per 10 s. */
export function pipeStderr(stream: Readable, state: StderrSink): void {
  let line = '';
  let truncated = false;
  let windowStart = 0;
  let count = 0;
  let dropped = 0;
  const emit = () => {
    const text = line.replace(/\r$/, '');
    const wasTruncated = truncated;
    line = '';
    truncated = false;
    if (!text.trim()) return;
    state.stderrTail.push(text.slice(0, 500));
    if (state.stderrTail.length > STDERR_TAIL) state.stderrTail.shift();
    const now = Date.now();
    if (now - windowStart > STDERR_WINDOW_MS) {
      if (dropped > 0) state.log.debug({ dropped }, 'MCP server stderr lines dropped');
      windowStart = now;
      count = 0;
      dropped = 0;
    }
    if (++count > STDERR_MAX_LINES_PER_WINDOW) {
      dropped++;
      return;
    }
    state.log.debug({ stderr: wasTruncated ? `${text}…[truncated]` : text }, 'MCP server stderr');
  };
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf('\n', start);
      const piece = newline === -1 ? chunk.slice(start) : chunk.slice(start, newline);
      if (!truncated) {
        line += piece;
        if (line.length > STDERR_MAX_LINE) {
          line = line.slice(0, STDERR_MAX_LINE);
          truncated = true;
        }
      }
      if (newline === -1) return;
      emit();
      start = newline + 1;
    }
  });
  stream.on('end', emit);
  stream.on('error', () => undefined);
}

import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** What agentq keeps of a message over the limit: its size, its first and its last bytes. */
export interface OversizedMessage {
  bytes: number;
  head: string;
  tail: string;
}

/** A line as {@link LineReader} gives it: its text, or what is kept of a line over the limit. */
export type Line = { text: string } | { oversized: OversizedMessage };

// Enough of the start to find a message's kind and (when it comes first) its id; enough of the
// end for an id written last, as the TypeScript SDK's servers write it.
const HEAD_BYTES = 64 * 1024;
const TAIL_BYTES = 512;

/**
 * Splits a byte stream into `\n`-terminated lines holding at most `maxBytes` of any one line:
 * past that the rest of the line is counted and dropped (its head and tail kept), so one huge
 * message costs bounded memory and does not end the stream.
 */
export class LineReader {
  #chunks: Buffer[] = [];
  #size = 0;
  #head: Buffer | undefined;
  #tail = Buffer.alloc(0);

  constructor(readonly maxBytes: number) {}

  /** Feeds a chunk; returns the lines it completed. */
  push(chunk: Buffer): Line[] {
    const lines: Line[] = [];
    for (let start = 0; ; ) {
      const newline = chunk.indexOf(10, start);
      this.#add(newline === -1 ? chunk.subarray(start) : chunk.subarray(start, newline));
      if (newline === -1) return lines;
      lines.push(this.#end());
      start = newline + 1;
    }
  }

  /** Drops a partial line (the stream is closed). */
  clear(): void {
    this.#chunks = [];
    this.#size = 0;
    this.#head = undefined;
    this.#tail = Buffer.alloc(0);
  }

  #add(piece: Buffer): void {
    if (piece.length === 0) return;
    this.#size += piece.length;
    if (this.#head) {
      this.#tail =
        piece.length >= TAIL_BYTES
          ? Buffer.from(piece.subarray(-TAIL_BYTES))
          : Buffer.concat([this.#tail, piece]).subarray(-TAIL_BYTES);
      return;
    }
    this.#chunks.push(piece);
    if (this.#size <= this.maxBytes) return;
    const kept = Buffer.concat(this.#chunks);
    this.#head = Buffer.from(kept.subarray(0, HEAD_BYTES));
    this.#tail = Buffer.from(kept.subarray(-TAIL_BYTES));
    this.#chunks = [];
  }

  #end(): Line {
    const line: Line = this.#head
      ? { oversized: { bytes: this.#size, head: this.#head.toString('utf8'), tail: this.#tail.toString('utf8') } }
      : { text: Buffer.concat(this.#chunks).toString('utf8').replace(/\r$/, '') };
    this.clear();
    return line;
  }
}

/** What the start and end of a JSON-RPC message say about it, without parsing the whole. */
export interface Envelope {
  /** The message's top-level `id`, when found. */
  id?: string | number;
  /** It answers a request (`result` or `error` at the top level, no `method`). */
  response: boolean;
}

const ID_AT_END = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$/;
const ID_VALUE = /^\s*(-?\d+|"(?:[^"\\]|\\.)*")/;

/** Reads the top-level keys (and `id`) of a message from its head, and its `id` from its tail. */
export function envelopeOf(m: Pick<OversizedMessage, 'head' | 'tail'>): Envelope {
  const keys = new Set<string>();
  let id: string | undefined;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let stringStart = 0;
  let lastString: string | undefined;
  const { head } = m;
  for (let i = 0; i < head.length; i++) {
    const c = head[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') {
        inString = false;
        lastString = head.slice(stringStart, i);
      }
      continue;
    }
    if (c === '"') {
      inString = true;
      stringStart = i + 1;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') continue;
    if (c === ':' && depth === 1 && lastString !== undefined) {
      keys.add(lastString);
      if (lastString === 'id') id ??= ID_VALUE.exec(head.slice(i + 1))?.[1];
    }
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    lastString = undefined;
  }
  id ??= ID_AT_END.exec(m.tail)?.[1];
  const response = (keys.has('result') || keys.has('error')) && !keys.has('method');
  return { ...(id !== undefined && { id: JSON.parse(id) as string | number }), response };
}

/** Marks the error answers agentq writes in place of a server's (in the error's `data.agentq`). */
export type StandIn = 'message_too_large' | 'connection_lost';

/** A JSON-RPC error answer to request `id`, written by agentq itself; `text` is for the model. */
export function standInAnswer(id: string | number, kind: StandIn, text: string): JSONRPCMessage {
  const code = kind === 'connection_lost' ? ErrorCode.ConnectionClosed : ErrorCode.InternalError;
  return { jsonrpc: '2.0', id, error: { code, message: text, data: { agentq: kind, text } } };
}

/** The words for an answer over the limit. */
export function tooLargeText(bytes: number, maxBytes: number): string {
  return (
    `the server's answer was over the ${maxBytes}-byte limit on one MCP message (${bytes} bytes); ` +
    `it was discarded and the server kept running`
  );
}

import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { StreamingApi } from 'hono/utils/stream';

/**
 * Where a streamed response's bytes go (an event stream, the run list): the Node response itself,
 * or hono's stream where there is none (`app.request()`).
 */
export interface StreamSink {
  /** Writes `chunk`; resolves once the response can take more (backpressure), or its client is gone. */
  write(chunk: Uint8Array | string): Promise<void>;
  /** Writes `chunk`; resolves once it has left the process (its client has taken it), or its client is gone. */
  writeOut(chunk: Uint8Array): Promise<void>;
  /** The client is gone. */
  readonly aborted: boolean;
  onAbort(listener: () => void): void;
}

/** The headers of an event stream (hono's streamSSE sends the same). */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  connection: 'keep-alive',
};

/**
 * Writes straight to the Node response: a chunk goes to the socket with no stream in between,
 * and the socket's own callbacks say when a chunk has left the process.
 */
export class NodeSink implements StreamSink {
  private closed = false;
  private readonly listeners: Array<() => void> = [];

  constructor(
    private readonly res: ServerResponse,
    headers: OutgoingHttpHeaders = SSE_HEADERS,
  ) {
    res.writeHead(200, headers);
    res.flushHeaders();
    res.once('close', () => {
      this.closed = true;
      for (const l of this.listeners) l();
    });
  }

  get aborted(): boolean {
    return this.closed || this.res.destroyed;
  }

  onAbort(listener: () => void): void {
    if (this.aborted) listener();
    else this.listeners.push(listener);
  }

  async write(chunk: Uint8Array | string): Promise<void> {
    if (this.aborted || this.res.write(chunk)) return;
    await this.untilClosedOr('drain');
  }

  writeOut(chunk: Uint8Array): Promise<void> {
    if (this.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('close', done);
        resolve();
      };
      this.res.once('close', done);
      // Called once the chunk is handed to the system (or the write failed).
      this.res.write(chunk, done);
    });
  }

  /** Ends the response (a no-op once its client is gone). */
  end(): void {
    if (!this.aborted) this.res.end();
  }

  private untilClosedOr(event: 'drain'): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.res.off(event, done);
        this.res.off('close', done);
        resolve();
      };
      this.res.once(event, done);
      this.res.once('close', done);
    });
  }
}

/**
 * Writes through hono's stream (`stream()` or `streamSSE()`). Its writes resolve before a chunk
 * has left the process: up to three chunks wait in its TransformStream, the ReadableStream around
 * it and the socket until it drains, so a chunk is out once three more have been written after it.
 */
export class HonoSink implements StreamSink {
  private static readonly EMPTY = new Uint8Array(0);

  constructor(private readonly stream: StreamingApi) {}

  get aborted(): boolean {
    return this.stream.aborted;
  }

  onAbort(listener: () => void): void {
    this.stream.onAbort(listener);
  }

  async write(chunk: Uint8Array | string): Promise<void> {
    await this.stream.write(chunk);
  }

  async writeOut(chunk: Uint8Array): Promise<void> {
    await this.stream.write(chunk);
    for (let i = 0; i < 3 && !this.stream.aborted; i++) await this.stream.write(HonoSink.EMPTY);
  }
}

const KEEPALIVE = Symbol('keep-alive');

/**
 * `wait`, while `filler` is written to `sink` every `everyMs` (a proxy, or the server's idle
 * timeout, may cut a response that stays silent): an SSE comment, or whitespace in JSON.
 */
export async function keptAlive<T>(wait: Promise<T>, sink: StreamSink, everyMs: number, filler: string): Promise<T> {
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const tick = new Promise<typeof KEEPALIVE>((resolve) => (timer = setTimeout(() => resolve(KEEPALIVE), everyMs)));
    const got = await Promise.race([wait, tick]);
    clearTimeout(timer);
    if (got !== KEEPALIVE) return got as T;
    await sink.write(filler);
  }
}

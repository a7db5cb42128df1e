import type { StoredEvent } from '@agentq/shared/store';
import { UNCOUNTED_BELOW_BYTES, type ResponseBudget } from './response-budget.js';
import { keptAlive, type StreamSink } from './stream-sink.js';

/** An SSE comment: what an idle stream writes to stay open. */
const KEEPALIVE_COMMENT = ': keep-alive\n\n';

const encoder = new TextEncoder();
/**
 * An event's SSE frame, its data the JSON as stored, encoded once however many streams write it:
 * the hub hands every subscriber of a run the same event objects. The same bytes hono's writeSSE
 * writes (JSON as the stream stores it has no line breaks).
 */
const frames = new WeakMap<StoredEvent, Uint8Array>();
function frameOf(e: StoredEvent): Uint8Array {
  let frame = frames.get(e);
  if (!frame) {
    frame = encoder.encode(`${e.type ? `event: ${e.type}\n` : ''}data: ${e.data}\nid: ${e.id}\n\n`);
    frames.set(e, frame);
  }
  return frame;
}

/**
 * Writes one SSE response's events within the response budget: an event's frame that the budget
 * counts waits for room in it and holds it until the frame has left the process (its client has
 * taken it, or is gone). A stream waiting for room writes a keep-alive comment every
 * `keepAliveMs`: a proxy may cut a stream that stays silent.
 */
export class EventWriter {
  constructor(
    private readonly sink: StreamSink,
    private readonly responses: ResponseBudget,
    private readonly keepAliveMs: number,
    /** Aborted when the client has gone (or the stream is ended): waits for room give up. */
    private readonly gone: AbortSignal,
    /** The stream's key: its frames count in that tenant's share of the budget. */
    private readonly key?: string,
  ) {}

  /**
   * Waits for room for `bytes` the caller will hold (see ResponseBudget.waitFor); null if the client went
   * away first.
   */
  room(bytes: number): Promise<(() => void) | null> {
    return this.keptAlive(this.responses.waitFor(bytes, this.gone, this.key));
  }

  /**
   * Writes event `e`. A frame the hub hands every subscriber of the run is one buffer, held once
   * for all of them; `held` says the caller holds its room already (room). False if the client
   * went away first.
   */
  async write(e: StoredEvent, held = false): Promise<boolean> {
    const frame = frameOf(e);
    if (frame.byteLength < UNCOUNTED_BELOW_BYTES) {
      // Not counted: written at once (most events).
      await this.sink.write(frame);
      return !this.sink.aborted;
    }
    const release = held
      ? () => {}
      : await this.keptAlive(this.responses.waitForShared(frame, frame.byteLength, this.gone, this.key));
    if (!release) return false;
    try {
      await this.sink.writeOut(frame);
    } finally {
      release();
    }
    return !this.sink.aborted;
  }

  /** A comment line that keeps an idle stream open. */
  keepAlive(): Promise<void> {
    return this.sink.write(KEEPALIVE_COMMENT);
  }

  private keptAlive<T>(wait: Promise<T>): Promise<T> {
    return keptAlive(wait, this.sink, this.keepAliveMs, KEEPALIVE_COMMENT);
  }
}

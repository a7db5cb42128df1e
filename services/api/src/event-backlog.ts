import type { StoredEvent } from '@agentq/shared/store';

/**
 * The live events one SSE subscriber has been handed and not yet written. A client that does not
 * read stalls its writes while the hub goes on handing it its run's events: past `maxEvents` of
 * them, or `maxBytes` of their data (but for one event alone), the backlog drops what it holds
 * and is `behind`, and the writer reads on from the run's stream in Redis, from the last event it
 * wrote, a page at a time. So a stalled client holds at most that much however busy its run (the
 * hub hands every subscriber the same objects: what a backlog holds is shared, but a stalled one
 * keeps it alive), and, once it reads again, gets every event still in the stream, in order, once.
 */
export class EventBacklog {
  private events: StoredEvent[] = [];
  private bytes = 0;
  private dropped = false;

  constructor(
    private readonly maxEvents: number,
    private readonly maxBytes = Infinity,
  ) {}

  /** Events handed by the hub; dropped (and the backlog behind) once more than it may hold are held. */
  push(events: StoredEvent[]): void {
    if (this.dropped) return;
    for (const e of events) {
      this.events.push(e);
      this.bytes += e.data.length;
    }
    // One event alone is held whatever its size: a model's long answer, which the hub hands
    // every subscriber as one object, is then written from it (and held once in the response
    // budget) rather than read again from Redis by each of them.
    if (this.events.length > this.maxEvents || (this.bytes > this.maxBytes && this.events.length > 1)) {
      this.events = [];
      this.bytes = 0;
      this.dropped = true;
    }
  }

  get size(): number {
    return this.events.length;
  }

  /** Events were dropped: the writer is to read them from the stream (catchUp). */
  get behind(): boolean {
    return this.dropped;
  }

  /** What is held, in order, handed over. */
  take(): StoredEvent[] {
    const out = this.events;
    this.events = [];
    this.bytes = 0;
    return out;
  }

  /**
   * True once if events were dropped: the writer must read the stream from its last written
   * event (what arrives from now on is held again; an event read both ways is written once).
   */
  catchUp(): boolean {
    if (!this.dropped) return false;
    this.dropped = false;
    return true;
  }
}

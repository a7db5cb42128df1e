import type { RedisClient } from '../infra/redis.js';
import type { z } from 'zod';
import type { Known, runEventDataSchemas } from '../core/schemas/api.js';
import type { RunEvent, RunEventType } from '../core/schemas/events.js';
import { parseJson } from './run-hash.js';
import { EVENTS_MAXLEN, runKeys } from './keys.js';
import { redisScript } from './redis-script.js';

/**
 * The `data:` of an event of type `T` as its writer gives it: what its published schema
 * describes, but the `run_id` and `at` that every event carries (eventJson adds them).
 */
export type RunEventData<T extends RunEventType> = Omit<
  Known<z.input<(typeof runEventDataSchemas)[T]>>,
  'at' | 'run_id'
> & { run_id?: string };

/**
 * An event's data as stored (the scripts that append events take it as JSON): with `run_id`, the
 * run it is about (a `subrun.*` event names its sub-run), and `at`, when it happened.
 */
export const eventJson = <T extends RunEventType>(
  _type: T,
  runId: string,
  data: RunEventData<T>,
  at = new Date().toISOString(),
): string => JSON.stringify({ run_id: runId, ...data, at });

/** A page of a stream's events within a byte limit (see read-event-page.lua). */
const readEventPage = redisScript({
  file: 'read-event-page',
  keys: (k: { eventsKey: string }) => [k.eventsKey],
  args: (a: { start: string; count: number; maxBytes: number }) => [a.start, a.count, a.maxBytes],
  reply: (r) => r as [[string, string[]][], string, number],
});

/**
 * An event as its stream stores it, its data still the JSON it was written as: what an SSE frame
 * carries as it is, without parsing and serializing it again.
 */
export interface StoredEvent {
  id: string;
  type: RunEventType;
  /** The event's data, JSON. */
  data: string;
}

/** A page of a run's events read with a byte limit (RunEventLog.readPage). */
export interface EventPage {
  events: StoredEvent[];
  /**
   * The event the page stopped before because it would not fit in the page's bytes: its id and
   * its size as stored. Alone larger than a page, it is read by itself (readOne).
   */
  next: { id: string; bytes: number } | null;
}

/** A run's event stream (a capped Redis Stream): what SSE clients read and resume. */
export class RunEventLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  key(runId: string): string {
    return runKeys(this.prefix, runId).events;
  }

  /**
   * Appends an event to the run's stream, trimming it to EVENTS_MAXLEN; returns its id. `trim:
   * false` for an event that comes once a step (the step's commit trims the stream).
   */
  async append<T extends RunEventType>(
    runId: string,
    type: T,
    data: RunEventData<T>,
    { trim = true } = {},
  ): Promise<string> {
    const json = eventJson(type, runId, data);
    const key = this.key(runId);
    return (await (trim
      ? this.redis.xadd(key, 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'type', type, 'data', json)
      : this.redis.xadd(key, '*', 'type', type, 'data', json))) as string;
  }

  /** The id of the run's latest event, or null when its stream is empty or gone. */
  async lastId(runId: string): Promise<string | null> {
    const rows = await this.redis.xrevrange(this.key(runId), '+', '-', 'COUNT', 1);
    return rows[0]?.[0] ?? null;
  }

  /** Events after `afterId` (exclusive; '0' for all), oldest first. */
  async read(runId: string, afterId = '0', count = 1000): Promise<RunEvent[]> {
    const start = afterId === '0' ? '-' : `(${afterId}`;
    const rows = await this.redis.xrange(this.key(runId), start, '+', 'COUNT', String(count));
    return rows.map(([id, f]) => eventFrom(id, f));
  }

  /**
   * Events after `afterId` (exclusive; '0' for all), oldest first: at most `count`, and no more
   * than `maxBytes` of them as stored, so that what a reader holds does not grow with the
   * events' size. An event that would not fit is `next`; the page is empty when it alone is
   * larger than `maxBytes`.
   */
  async readPage(runId: string, afterId: string, count: number, maxBytes: number): Promise<EventPage> {
    const start = afterId === '0' ? '-' : `(${afterId}`;
    const [rows, nextId, nextBytes] = await readEventPage(
      this.redis,
      { eventsKey: this.key(runId) },
      { start, count, maxBytes },
    );
    return {
      events: rows.map(([id, f]) => storedEventFrom(id, f)),
      next: nextId ? { id: nextId, bytes: Number(nextBytes) } : null,
    };
  }

  /** The event `id` of the run's stream, or null when it is not there (trimmed, or the stream is gone). */
  async readOne(runId: string, id: string): Promise<StoredEvent | null> {
    const rows = await this.redis.xrange(this.key(runId), id, id);
    return rows[0] ? storedEventFrom(rows[0][0], rows[0][1]) : null;
  }
}

/** One stream entry (`type`, `data` fields) as stored; a missing `data` is an empty object. */
export function storedEventFrom(id: string, fields: string[]): StoredEvent {
  let type = '';
  let data = '{}';
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] === 'type') type = fields[i + 1];
    else if (fields[i] === 'data') data = fields[i + 1];
  }
  return { id, type: type as RunEventType, data };
}

/** Parses one stream entry (`type`, `data` fields). */
export function eventFrom(id: string, fields: string[]): RunEvent {
  const { type, data } = storedEventFrom(id, fields);
  return { id, type, data: parseJson(data, {}) };
}

/** How much of a tool call's output its `tool.completed` event carries. */
export const EVENT_OUTPUT_MAX_BYTES = 16 * 1024;

/** A tool call's output for its event: whole, or its first 16 KB (never splitting a character) and `truncated`. */
export function eventOutput(text: string): { output: string; truncated?: true } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= EVENT_OUTPUT_MAX_BYTES) return { output: text };
  let cut = EVENT_OUTPUT_MAX_BYTES;
  while (cut > 0 && (bytes[cut] & 0xc0) === 0x80) cut--;
  return { output: bytes.subarray(0, cut).toString('utf8'), truncated: true };
}

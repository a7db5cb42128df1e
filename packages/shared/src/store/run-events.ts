import type { RedisClient } from '../redis.js';
import type { z } from 'zod';
import type { Known, runEventDataSchemas } from '../schemas/api.js';
import type { RunEvent, RunEventType } from '../schemas/events.js';
import { parseJson } from './run-hash.js';
import { EVENTS_MAXLEN } from './lua.js';
import { runKeys } from './keys.js';

/**
 * The `data:` of an event of type `T` as its writer gives it: what its published schema
 * describes, but the `run_id` and `at` that every event carries (eventJson adds them).
 */
export type RunEventData<T extends RunEventType> = Omit<Known<z.input<(typeof runEventDataSchemas)[T]>>, 'at' | 'run_id'> & { run_id?: string };

/**
 * An event's data as stored (the scripts that append events take it as JSON): with `run_id`, the
 * run it is about (a `subrun.*` event names its sub-run), and `at`, when it happened.
 */
export const eventJson = <T extends RunEventType>(_type: T, runId: string, data: RunEventData<T>, at = new Date().toISOString()): string =>
  JSON.stringify({ run_id: runId, ...data, at });

/** A run's event stream (a capped Redis Stream): what SSE clients read and resume. */
export class RunEventLog {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  key(runId: string): string {
    return runKeys(this.prefix, runId).events;
  }

  /** Appends an event to the run's stream; returns its id. */
  async append<T extends RunEventType>(runId: string, type: T, data: RunEventData<T>): Promise<string> {
    return (await this.redis.xadd(this.key(runId), 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'type', type, 'data', eventJson(type, runId, data))) as string;
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
}

/** Parses one stream entry (`type`, `data` fields). */
export function eventFrom(id: string, fields: string[]): RunEvent {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]] = fields[i + 1];
  return { id, type: f.type as RunEventType, data: parseJson(f.data, {}) };
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

import type { Redis } from 'ioredis';
import type { z } from 'zod';
import type { Known, runEventDataSchemas } from '../schemas/api.js';
import type { RunEvent, RunEventType } from '../schemas/events.js';
import { parseJson } from './run-hash.js';
import { EVENTS_MAXLEN } from './lua.js';
import { runKeys } from './keys.js';

/** The `data:` of an event of type `T`, as its published schema describes it. */
export type RunEventData<T extends RunEventType> = Known<z.input<(typeof runEventDataSchemas)[T]>>;

/** Serialises an event's data for the stream (scripts that append events take it as JSON). */
export const eventJson = <T extends RunEventType>(_type: T, data: RunEventData<T>): string => JSON.stringify(data);

/** A run's event stream (a capped Redis Stream): what SSE clients read and resume. */
export class RunEventLog {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(runId: string): string {
    return runKeys(this.prefix, runId).events;
  }

  /** Appends an event to the run's stream; returns its id. */
  async append<T extends RunEventType>(runId: string, type: T, data: RunEventData<T>): Promise<string> {
    return (await this.redis.xadd(this.key(runId), 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'type', type, 'data', eventJson(type, data))) as string;
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

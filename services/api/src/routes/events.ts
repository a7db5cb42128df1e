import { Hono } from 'hono';
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { streamSSE } from 'hono/streaming';
import { isTerminal, TERMINAL_EVENT_TYPES } from '@agentq/shared/core';
import { type Logger } from '@agentq/shared/infra';
import { type RunStore, type StoredEvent } from '@agentq/shared/store';
import { EventBacklog } from '../event-backlog.js';
import type { EventHub } from '../event-hub.js';
import { HttpError } from '../http-error.js';
import { EventWriter } from '../event-writer.js';
import { UNCOUNTED_BELOW_BYTES, type ResponseBudget } from '../response-budget.js';
import { HonoSink, NodeSink, SSE_HEADERS, type StreamSink } from '../stream-sink.js';
import { compareIds, isStreamId } from '../stream-id.js';
import type { StreamSlots } from '../stream-slots.js';

type Env = { Variables: { tenant: string } };

/**
 * Events read from a run's stream at a time. Most events' data is small (a tool call's output is
 * cut at 16 KB), but a step's `step.completed` and the terminal event carry the model's whole
 * answer (up to MODEL_RESPONSE_MAX_MB).
 */
const PAGE = 200;
/**
 * The most live events, and bytes of their data, a subscriber holds while its client does not
 * take them (see EventBacklog): past them it reads on from Redis. Above the hub's read of 500 a
 * stream at a time, so that a burst of small events is written from memory by every subscriber.
 */
const BACKLOG_EVENTS = 1_000;
const BACKLOG_BYTES = 1024 * 1024;
/**
 * The most bytes of events a page read from Redis holds: pages stay below what the response
 * budget counts, and an event larger than a page is read on its own once the budget has room.
 */
const PAGE_BYTES = UNCOUNTED_BELOW_BYTES - 1;

/** A resume point given as `field` (the header or the query parameter), or a 400 naming it. */
function resumePoint(field: string, value: string): string {
  if (isStreamId(value)) return value;
  const message =
    `${field} must be an event id this stream sent: ` +
    `"<ms>-<seq>", each part a whole number below 2^64 (like "1700000000000-0")`;
  throw new HttpError(400, 'validation_error', message, [{ field, message }]);
}

/**
 * `GET /v1/runs/:id/events`: the run's history, then its live events, as SSE; resumable with
 * `Last-Event-ID` (no duplicates, no gaps); closes after the terminal event.
 */
export function eventsRoutes(deps: {
  store: RunStore;
  hub: EventHub;
  responses: ResponseBudget;
  streams: StreamSlots;
  /**
   * How often a stream with nothing to send writes a keep-alive comment (a third of CLIENT_IDLE_TIMEOUT_MS,
   * at most 15 s).
   */
  keepAliveMs: number;
  logger: Logger;
  ownRun: (tenant: string, id: string) => Promise<unknown>;
}) {
  const app = new Hono<Env>();
  app.get('/:id/events', async (c) => {
    const id = c.req.param('id');
    // Checked before it reaches Redis: an id Redis refuses would fail the read (every
    // subscriber's, as the hub reads all streams at once). The header wins over the query form.
    const header = c.req.header('last-event-id');
    const query = c.req.query('last_event_id');
    const fromQuery = query === undefined ? undefined : resumePoint('last_event_id', query);
    const from = header === undefined ? (fromQuery ?? '0') : resumePoint('Last-Event-ID', header);
    await deps.ownRun(c.get('tenant'), id);
    if (from !== '0') {
      // An id past the stream's last event is none this stream sent; followed, it would also
      // set the hub's position for this run past the events its other subscribers wait for.
      const top = await deps.store.events.lastId(id);
      if (top !== null && compareIds(from, top) > 0) {
        const field = header === undefined ? 'last_event_id' : 'Last-Event-ID';
        const message = `${field} "${from}" is after this run's last event (${top}): give an event id this stream sent`;
        throw new HttpError(400, 'validation_error', message, [{ field, message }]);
      }
    }
    // HEAD (hono routes it here): the headers a stream would have, and no stream.
    if (c.req.method === 'HEAD') return c.body(null, 200, SSE_HEADERS);
    // Held from here until the stream ends (a 429 or 503 if this key or this process has no room).
    const slot = deps.streams.take(c.get('tenant'));

    // On Node, straight to the response; else (`app.request()`) through hono's stream.
    const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (!outgoing)
      return streamSSE(c, (stream) => follow(new HonoSink(stream), id, from, c.get('tenant')).finally(slot));
    let sink: NodeSink;
    try {
      sink = new NodeSink(outgoing);
    } catch (err) {
      slot();
      throw err;
    }
    void follow(sink, id, from, c.get('tenant'))
      .catch((err: unknown) =>
        deps.logger.warn(
          { run_id: id, err: err instanceof Error ? err.message : String(err) },
          'event stream ended by an error',
        ),
      )
      .finally(() => {
        slot();
        sink.end();
      });
    return RESPONSE_ALREADY_SENT;
  });

  /**
   * Writes run `id`'s events after `from` to `sink`: its history, then its live events, until its
   * terminal event. Its large events count in `tenant`'s share of the response budget.
   */
  async function follow(sink: StreamSink, id: string, from: string, tenant: string): Promise<void> {
    const key = deps.store.events.key(id);
    let last = from;
    let finished = false;
    let wake: (() => void) | null = null;
    const backlog = new EventBacklog(BACKLOG_EVENTS, BACKLOG_BYTES);
    const gone = new AbortController();
    // Subscribe before reading the history so that nothing falls between the two.
    const unsubscribe = deps.hub.subscribe(
      key,
      from,
      (events) => {
        backlog.push(events);
        wake?.();
      },
      // Redis refused to read this stream: end the response; the client may resume.
      () => {
        finished = true;
        gone.abort();
        wake?.();
      },
    );
    sink.onAbort(() => {
      finished = true;
      gone.abort();
      wake?.();
    });
    const out = new EventWriter(sink, deps.responses, deps.keepAliveMs, gone.signal, tenant);
    const send = async (events: StoredEvent[], held = false) => {
      for (const e of events) {
        if (finished) return;
        if (last !== '0' && compareIds(e.id, last) <= 0) continue;
        if (!(await out.write(e, held))) return;
        last = e.id;
        if (TERMINAL_EVENT_TYPES.has(e.type)) finished = true;
      }
    };
    try {
      // The stream from the last event written on, a page at a time; an event too large for a
      // page is read alone once the response budget has room for it.
      const drain = async () => {
        while (!finished) {
          const { events, next } = await deps.store.events.readPage(id, last, PAGE, PAGE_BYTES);
          await send(events);
          if (finished) break;
          if (next && next.bytes > PAGE_BYTES) {
            // Held while it is written: the event as read, and its frame.
            const release = await out.room(2 * next.bytes);
            if (!release) break;
            try {
              // Gone if trimmed meanwhile: the next page goes on from what is there.
              const alone = await deps.store.events.readOne(id, next.id);
              if (alone) await send([alone], true);
            } finally {
              release();
            }
            continue;
          }
          if (!next && events.length < PAGE) break;
        }
      };
      await drain();
      // Resumed after the terminal event (or it fell out of the capped stream): the run has
      // ended, so read what may have come meanwhile and close instead of idling forever.
      if (!finished) {
        const run = await deps.store.runs.get(id);
        if (!run || isTerminal(run.status)) {
          await drain();
          finished = true;
        }
      }
      while (!finished) {
        if (backlog.catchUp()) {
          await drain();
          continue;
        }
        if (backlog.size === 0) {
          // Woken by new events or an abort, else after the keep-alive interval.
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, deps.keepAliveMs);
            wake = () => {
              clearTimeout(t);
              resolve();
            };
          });
          wake = null;
          // Nothing to write and nothing dropped: the keep-alive interval passed.
          if (backlog.size === 0 && !backlog.behind && !finished) await out.keepAlive();
          continue;
        }
        await send(backlog.take());
      }
    } catch (err) {
      // The status line is long gone: log it (no stack for the client) and end the stream.
      deps.logger.warn({ run_id: id, err: (err as Error).message }, 'event stream ended by an error');
    } finally {
      unsubscribe();
    }
  }
  return app;
}

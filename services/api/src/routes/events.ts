import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { isTerminal, TERMINAL_EVENT_TYPES, type RunEvent, type RunStore } from '@agentq/shared';
import { compareIds, type EventHub } from '../event-hub.js';
import { HttpError } from '../http-error.js';

type Env = { Variables: { owner: string } };

const KEEPALIVE_MS = 15_000;

/**
 * `GET /v1/runs/:id/events`: the run's history, then its live events, as SSE; resumable with
 * `Last-Event-ID` (no duplicates, no gaps); closes after the terminal event.
 */
export function eventsRoutes(deps: { store: RunStore; hub: EventHub; ownRun: (owner: string, id: string) => Promise<unknown> }) {
  const app = new Hono<Env>();
  app.get('/:id/events', async (c) => {
    const id = c.req.param('id');
    await deps.ownRun(c.get('owner'), id);
    const from = c.req.header('last-event-id') ?? c.req.query('last_event_id') ?? '0';
    if (from !== '0' && !/^\d+-\d+$/.test(from)) throw new HttpError(400, 'validation_error', 'Last-Event-ID must be an event id this stream sent (like "1700000000000-0")');
    const key = deps.store.events.key(id);

    return streamSSE(c, async (stream) => {
      let last = from;
      let finished = false;
      let wake: (() => void) | null = null;
      const pending: RunEvent[] = [];
      // Subscribe before reading the history so that nothing falls between the two.
      const unsubscribe = deps.hub.subscribe(key, from, (events) => {
        pending.push(...events);
        wake?.();
      });
      stream.onAbort(() => {
        finished = true;
        wake?.();
      });
      const send = async (events: RunEvent[]) => {
        for (const e of events) {
          if (finished) return;
          if (last !== '0' && compareIds(e.id, last) <= 0) continue;
          await stream.writeSSE({ id: e.id, event: e.type, data: JSON.stringify(e.data) });
          last = e.id;
          if (TERMINAL_EVENT_TYPES.has(e.type)) finished = true;
        }
      };
      try {
        const drain = async () => {
          for (;;) {
            const page = await deps.store.events.read(id, last, 1000);
            await send(page);
            if (page.length < 1000 || finished) break;
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
          if (pending.length === 0) {
            // Woken by new events or an abort, else after the keep-alive interval.
            await new Promise<void>((resolve) => {
              const t = setTimeout(resolve, KEEPALIVE_MS);
              wake = () => {
                clearTimeout(t);
                resolve();
              };
            });
            wake = null;
            if (pending.length === 0 && !finished) {
              await stream.write(': keep-alive\n\n');
              continue;
            }
          }
          await send(pending.splice(0));
        }
      } finally {
        unsubscribe();
      }
    });
  });
  return app;
}

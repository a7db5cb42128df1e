import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { stream } from 'hono/streaming';
import type { RunObject } from '@agentq/shared/core';
import type { ListedBatch } from '@agentq/shared/store';
import type { ResponseBudget } from './response-budget.js';
import { HonoSink, keptAlive, NodeSink, type StreamSink } from './stream-sink.js';

const JSON_HEADERS = { 'content-type': 'application/json; charset=UTF-8' };
const encoder = new TextEncoder();

/**
 * Writes `{"data": [runs], "next": cursor}` as the runs are read (each as `shown` makes it: a run
 * that waits with its requests), a batch at a time, so that a page of large runs is never held
 * whole. A batch of 64 KB or more waits for room in the response budget, in the caller's key's
 * share, before it is read: twice its size as stored (the runs as read, and their JSON), held
 * until it has left the process (as an event stream's large event is); one whose JSON came out
 * larger waits again for that. A client that lists runs with large outputs and does not read
 * holds no more than the budget counts. While it waits, a line break every `keepAliveMs`
 * (whitespace JSON allows) keeps the connection from being cut as idle. The first batch is sized
 * before the answer starts, so a store that is down is still a 503 (later failures can only cut
 * the answer short).
 */
export async function streamRunList(
  c: Context,
  pages: AsyncGenerator<ListedBatch, string | null>,
  o: {
    budget: ResponseBudget;
    keepAliveMs: number;
    shown?: (run: RunObject) => Promise<RunObject>;
    /** A read that failed once the answer had begun (it is cut short). */
    onError: (err: Error) => void;
  },
): Promise<Response> {
  let batch = await pages.next();
  const key = c.get('tenant') as string | undefined;
  const shown = o.shown ?? (async (r: RunObject) => r);
  const write = async (sink: StreamSink) => {
    const gone = new AbortController();
    sink.onAbort(() => gone.abort());
    await sink.write('{"data":[');
    let sep = '';
    while (!batch.done) {
      const { bytes } = batch.value;
      let release = await keptAlive(o.budget.waitFor(2 * bytes, gone.signal, key), sink, o.keepAliveMs, '\n');
      if (!release) return;
      try {
        const runs = await Promise.all((await batch.value.read()).map(shown));
        if (runs.length) {
          const chunk = encoder.encode(sep + runs.map((r) => JSON.stringify(r)).join(','));
          sep = ',';
          // Larger than sized (a run that ended meanwhile, the requests a waiting run shows): its
          // room is taken again at its size, the first given back so that no two lists each hold
          // part of the budget and wait for the rest.
          if (chunk.byteLength > bytes) {
            release();
            release = await keptAlive(
              o.budget.waitFor(2 * chunk.byteLength, gone.signal, key),
              sink,
              o.keepAliveMs,
              '\n',
            );
            if (!release) return;
          }
          await sink.writeOut(chunk);
        }
      } finally {
        release?.();
      }
      if (sink.aborted) return;
      batch = await pages.next();
    }
    await sink.write(`],"next":${JSON.stringify(batch.value)}}`);
  };
  // On Node, straight to the response (whose socket says when a batch has left); else
  // (`app.request()`) through hono's stream.
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (!outgoing) {
    c.header('content-type', JSON_HEADERS['content-type']);
    return stream(
      c,
      (s) => write(new HonoSink(s)),
      async (err) => o.onError(err),
    );
  }
  const sink = new NodeSink(outgoing, JSON_HEADERS);
  write(sink).then(
    () => sink.end(),
    (err: unknown) => {
      o.onError(err instanceof Error ? err : new Error(String(err)));
      // Cut short, not ended: the client sees a broken answer, not a well-ended one that is not JSON.
      outgoing.destroy();
    },
  );
  return RESPONSE_ALREADY_SENT;
}

import type { Context } from 'hono';
import { stream } from 'hono/streaming';
import type { RunObject } from '@agentq/shared';

/**
 * Writes `{"data": [runs], "next": cursor}` as the runs are read (each as `shown` makes it: a run
 * that waits with its requests), a batch at a time, so that a
 * page of large runs is never held whole. The first batch is read before the answer starts, so
 * a store that is down is still a 503 (later failures can only cut the stream short).
 */
export async function streamRunList(c: Context, pages: AsyncGenerator<RunObject[], string | null>, shown: (run: RunObject) => Promise<RunObject> = async (r) => r): Promise<Response> {
  let first = await pages.next();
  c.header('content-type', 'application/json; charset=UTF-8');
  return stream(c, async (s) => {
    await s.write('{"data":[');
    let sep = '';
    while (!first.done) {
      for (const run of first.value) {
        await s.write(sep + JSON.stringify(await shown(run)));
        sep = ',';
      }
      first = await pages.next();
    }
    await s.write(`],"next":${JSON.stringify(first.value)}}`);
  });
}

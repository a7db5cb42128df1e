import type { RedisClient } from '../infra/redis.js';
import type { RunObject, RunStatus } from '../core/schemas/run.js';
import { RUN_FIELDS as F } from './keys.js';
import { isRunHash, runObjectFrom, type RunHash } from './run-hash.js';

// The index is scanned LIST_SCAN ids at a time; runs are read LIST_BATCH at a time.
const LIST_SCAN = 50;
const LIST_BATCH = 10;
/** The run hash's fields that grow with what a run was asked and answered (see sizeOf). */
const LARGE_FIELDS = [F.spec, F.output, F.outputParsed, F.error];
/** About what any other field of a run hash holds, name and value: counters, times, markers. */
const SMALL_FIELD_BYTES = 64;

/**
 * A batch of the run list, sized before it is read: `bytes` is about what reading it brings in
 * (its runs as stored), and `read()` reads it.
 */
export interface ListedBatch {
  bytes: number;
  read(): Promise<RunObject[]>;
}

/**
 * Runs of one tenant, newest first, in small batches (a run echoes what it was asked, so a
 * page is never held whole); returns the `next` cursor. `after` is the last id of the
 * previous page. Each batch comes sized before it is read (ListedBatch): the caller can make
 * room for it first. Call a batch's `read()` before asking for the next batch.
 */
export async function* listRuns(
  redis: RedisClient,
  keys: { index: string; runKey: (runId: string) => string },
  opts: { limit: number; after?: string; status?: RunStatus },
): AsyncGenerator<ListedBatch, string | null> {
  const index = keys.index;
  let cursor = opts.after ? `(${opts.after}` : '+';
  let found = 0;
  let last: string | null = null;
  // With a status filter a page may take several index batches; stop after a bounded scan.
  for (let scanned = 0; found < opts.limit && scanned < 20_000; ) {
    const ids = await redis.zrevrangebylex(index, cursor, '-', 'LIMIT', 0, LIST_SCAN);
    if (!ids.length) return null;
    scanned += ids.length;
    for (let i = 0; i < ids.length && found < opts.limit; ) {
      // Without a filter, no more runs than the page still needs are sized and read.
      const batch = ids.slice(i, i + (opts.status ? LIST_BATCH : Math.min(LIST_BATCH, opts.limit - found)));
      i += batch.length;
      // Sized first, with each run's status: with a filter, only the runs that match are
      // counted and read.
      const sizes = await sizeOf(redis, keys.runKey, batch);
      const wanted = (j: number) => sizes[j]!.status !== null && (!opts.status || sizes[j]!.status === opts.status);
      let wasRead = false;
      const read = async (): Promise<RunObject[]> => {
        wasRead = true;
        // Each run is its own tree's (a Cluster may hold them on different nodes): read apart,
        // sent back to back.
        const rows = await Promise.all(batch.map((id, j) => (wanted(j) ? redis.hgetall(keys.runKey(id)) : null)));
        const out: RunObject[] = [];
        const expired: string[] = [];
        for (let j = 0; j < batch.length && found < opts.limit; j++) {
          cursor = `(${batch[j]}`;
          if (sizes[j]!.status === null) expired.push(batch[j]!);
          if (!wanted(j)) continue;
          const h = rows[j] as RunHash;
          if (!isRunHash(h)) expired.push(batch[j]!);
          // (Its status is checked again: it may have moved on since it was sized.)
          else if (!opts.status || h[F.status] === opts.status) {
            out.push(runObjectFrom(batch[j]!, h));
            found++;
            last = batch[j]!;
          }
        }
        if (expired.length) await redis.zrem(index, ...expired);
        return out;
      };
      yield { bytes: sizes.reduce((sum, r, j) => sum + (wanted(j) ? r.bytes : 0), 0), read };
      // The page's place in the index moves as a batch is read.
      if (!wasRead) throw new Error('RunRecords.list: a batch was passed over without read()');
    }
    if (found === opts.limit) {
      const more = await redis.zrevrangebylex(index, cursor, '-', 'LIMIT', 0, 1);
      return more.length ? last : null;
    }
    if (ids.length < LIST_SCAN) return null;
  }
  return last;
}

/**
 * Each run's status (null: the run is gone) and about how many bytes reading its hash brings
 * in, without reading it: the lengths of the fields that grow with what a run was asked and
 * answered, and a bound for each of the others (one round trip, the commands sent back to back).
 */
async function sizeOf(
  redis: RedisClient,
  runKey: (runId: string) => string,
  runIds: string[],
): Promise<Array<{ status: string | null; bytes: number }>> {
  return Promise.all(
    runIds.map(async (id) => {
      const key = runKey(id);
      const [status, fields, ...lengths] = await Promise.all([
        redis.hget(key, F.status),
        redis.hlen(key),
        ...LARGE_FIELDS.map((field) => redis.hstrlen(key, field)),
      ]);
      return {
        status,
        bytes: (fields as number) * SMALL_FIELD_BYTES + (lengths as number[]).reduce((a, b) => a + b, 0),
      };
    }),
  );
}

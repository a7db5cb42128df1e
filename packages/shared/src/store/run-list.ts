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

/** Which runs a list shows: of a status, only top-level runs (no sub-runs), those whose id or metadata holds `q`. */
export interface ListFilter {
  status?: RunStatus;
  topLevel?: boolean;
  /** Matched case-insensitively against the run's id and its metadata's JSON text. */
  q?: string;
}

/** The most index entries one page of a filtered list looks at (a page of a rare match may come back short). */
const LIST_MAX_SCAN = 20_000;

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
  opts: ListFilter & { limit: number; after?: string },
): AsyncGenerator<ListedBatch, string | null> {
  const index = keys.index;
  let cursor = opts.after ? `(${opts.after}` : '+';
  let found = 0;
  let last: string | null = null;
  const filtered = Boolean(opts.status || opts.topLevel || opts.q);
  const q = opts.q?.toLowerCase();
  // With a filter a page may take several index batches; stop after a bounded scan.
  for (let scanned = 0; found < opts.limit && scanned < LIST_MAX_SCAN; ) {
    const ids = await redis.zrevrangebylex(index, cursor, '-', 'LIMIT', 0, LIST_SCAN);
    if (!ids.length) return null;
    scanned += ids.length;
    for (let i = 0; i < ids.length && found < opts.limit; ) {
      // Without a filter, no more runs than the page still needs are sized and read.
      const batch = ids.slice(i, i + (filtered ? LIST_BATCH : Math.min(LIST_BATCH, opts.limit - found)));
      i += batch.length;
      // Sized first, with each run's status (and what the other filters look at): with a filter, only the runs
      // that match are counted and read.
      const sizes = await sizeOf(redis, keys.runKey, batch, opts);
      const wanted = (j: number) => {
        const r = sizes[j]!;
        if (r.status === null || (opts.status && r.status !== opts.status)) return false;
        if (opts.topLevel && r.hasParent) return false;
        return !q || batch[j]!.toLowerCase().includes(q) || (r.metadata ?? '').toLowerCase().includes(q);
      };
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
  // The scan's bound came first: the next page goes on from the last run looked at, matched or not.
  return cursor === '+' ? last : cursor.slice(1);
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
  filter: ListFilter = {},
): Promise<Array<{ status: string | null; bytes: number; hasParent: boolean; metadata: string | null }>> {
  return Promise.all(
    runIds.map(async (id) => {
      const key = runKey(id);
      const [status, fields, parent, metadata, ...lengths] = await Promise.all([
        redis.hget(key, F.status),
        redis.hlen(key),
        filter.topLevel ? redis.hexists(key, F.parentRunId) : 0,
        filter.q ? metadataOf(redis, key) : null,
        ...LARGE_FIELDS.map((field) => redis.hstrlen(key, field)),
      ]);
      return {
        status: status as string | null,
        bytes: (fields as number) * SMALL_FIELD_BYTES + (lengths as number[]).reduce((a, b) => a + b, 0),
        hasParent: parent === 1,
        metadata: metadata as string | null,
      };
    }),
  );
}

/** A run's metadata as JSON text: its own field, or (a run stored before that field was) from its spec. */
async function metadataOf(redis: RedisClient, key: string): Promise<string | null> {
  const own = await redis.hget(key, F.metadata);
  if (own !== null) return own;
  const spec = await redis.hget(key, F.spec);
  if (spec === null) return null;
  return JSON.stringify((JSON.parse(spec) as { metadata?: unknown }).metadata ?? {});
}

/** How many runs of a tenant `countRuns` reads at most (the newest): past it the counts are of those. */
export const COUNT_MAX_RUNS = 10_000;
const COUNT_SCAN = 500;

/** How many runs of a tenant are in each status: of its newest COUNT_MAX_RUNS runs (`complete` false past it). */
export async function countRuns(
  redis: RedisClient,
  keys: { index: string; runKey: (runId: string) => string },
  opts: { topLevel?: boolean; max?: number } = {},
): Promise<{ counts: Partial<Record<RunStatus, number>>; runs: number; complete: boolean }> {
  const max = opts.max ?? COUNT_MAX_RUNS;
  const counts: Partial<Record<RunStatus, number>> = {};
  let runs = 0;
  let cursor = '+';
  for (let read = 0; read < max; ) {
    const ids = await redis.zrevrangebylex(keys.index, cursor, '-', 'LIMIT', 0, Math.min(COUNT_SCAN, max - read));
    if (!ids.length) return { counts, runs, complete: true };
    read += ids.length;
    cursor = `(${ids[ids.length - 1]}`;
    // Each run is its own tree's (a Cluster may hold them on different nodes): read apart, sent back to back.
    const rows = await Promise.all(
      ids.map((id) =>
        Promise.all([
          redis.hget(keys.runKey(id), F.status),
          opts.topLevel ? redis.hexists(keys.runKey(id), F.parentRunId) : 0,
        ]),
      ),
    );
    for (const [status, parent] of rows) {
      if (status === null || parent === 1) continue;
      counts[status as RunStatus] = (counts[status as RunStatus] ?? 0) + 1;
      runs++;
    }
    if (ids.length < COUNT_SCAN) return { counts, runs, complete: true };
  }
  const more = await redis.zrevrangebylex(keys.index, cursor, '-', 'LIMIT', 0, 1);
  return { counts, runs, complete: more.length === 0 };
}

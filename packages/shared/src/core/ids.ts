import { createHash, randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn 4 KB at a time, each used once: a draw per id cost more than the rest
// of making it (see docs/decisions/011-the-apis-request-path.md).
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = 0;

function randomSuffix(n: number): string {
  if (used + n > pool.length) {
    pool = randomBytes(POOL_BYTES);
    used = 0;
  }
  let out = '';
  for (let i = used; i < used + n; i++) out += ALPHABET[pool[i]! % 36];
  used += n;
  return out;
}

const time36 = (ms: number) => ms.toString(36).padStart(9, '0').slice(-9);

/**
 * A new id `<prefix>_<time><random>`: time first (base 36, fixed width) so that ids sort by
 * creation time, which is what the newest-first listing and its cursor rely on. A run id's
 * last TREE_TAG_LENGTH characters are its tree's tag (see treeTag).
 */
export function newId(prefix: 'run', now = Date.now()): string {
  return `${prefix}_${time36(now)}${randomSuffix(12)}`;
}

/** How many characters end a run id and name its tree. */
export const TREE_TAG_LENGTH = 4;

/**
 * The tag of a run's tree: the last characters of its id. A root run's are random; a sub-run
 * takes its root's (childRunId), so every key of a tree hashes to one Redis Cluster slot and
 * the tree lives in one cell.
 */
export const treeTag = (runId: string) => runId.slice(-TREE_TAG_LENGTH);

/**
 * The id of a sub-run, fixed by what starts it (`origin`: the tool job and the prompt's index),
 * so that a redelivered job creates no second child; it ends with the tree's tag.
 */
export function childRunId(parentRunId: string, origin: string, timestamp: number): string {
  const hash = BigInt(`0x${createHash('sha256').update(origin).digest('hex').slice(0, 20)}`)
    .toString(36)
    .padStart(12, '0');
  return `run_${time36(timestamp)}${hash.slice(-(12 - TREE_TAG_LENGTH))}${treeTag(parentRunId)}`;
}

/** True if `s` looks like an id this service made (used to 404 early on garbage). */
export function isRunId(s: string): boolean {
  return /^run_[0-9a-z]{21}$/.test(s);
}

/**
 * A run's webhook id (its job's id and the `webhook-id` header), fixed by the run so that a
 * delivery queued again is the same one: `whk_<run id without "run_">` for its terminal event,
 * with `_a<depth>` for the `run.requires_action` of its round at `depth`.
 */
export function runWebhookId(runId: string, round?: number): string {
  return `whk_${runId.slice('run_'.length)}${round === undefined ? '' : `_a${round}`}`;
}

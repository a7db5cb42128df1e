/** The largest part of a stream id that Redis accepts: both `<ms>` and `<seq>` are 64-bit unsigned. */
const MAX_PART = 2n ** 64n - 1n;

/**
 * `<ms>-<seq>` as Redis accepts it, as numbers; null for anything else (a missing part, a sign,
 * spaces, a part past 64 bits). `0` alone (the start of a stream) is `0-0`.
 */
export function parseStreamId(id: string): { ms: bigint; seq: bigint } | null {
  if (id === '0') return { ms: 0n, seq: 0n };
  // 20 digits hold 2^64 - 1; longer is refused before it becomes a number.
  const m = /^(\d{1,20})-(\d{1,20})$/.exec(id);
  if (!m) return null;
  const ms = BigInt(m[1]);
  const seq = BigInt(m[2]);
  return ms <= MAX_PART && seq <= MAX_PART ? { ms, seq } : null;
}

/** Whether Redis takes `id` as a stream position. */
export const isStreamId = (id: string): boolean => parseStreamId(id) !== null;

/**
 * Compares two parts of stream ids (digits) by value. Without leading zeros (as Redis writes
 * them) the longer is the larger and equal lengths compare as text; a part given with leading
 * zeros (a client's resume point may have them) is compared as a number.
 */
function comparePart(x: string, y: string): number {
  if ((x.length > 1 && x[0] === '0') || (y.length > 1 && y[0] === '0')) {
    const d = BigInt(x) - BigInt(y);
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  }
  if (x.length !== y.length) return x.length < y.length ? -1 : 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Compares two stream ids (`<ms>-<seq>`, or `0`), exactly: parts past 2^53 included. */
export function compareIds(a: string, b: string): number {
  const ai = a.indexOf('-');
  const bi = b.indexOf('-');
  return (
    comparePart(ai < 0 ? a : a.slice(0, ai), bi < 0 ? b : b.slice(0, bi)) ||
    comparePart(ai < 0 ? '0' : a.slice(ai + 1), bi < 0 ? '0' : b.slice(bi + 1))
  );
}

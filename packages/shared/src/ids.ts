import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

function randomSuffix(n: number): string {
  const bytes = randomBytes(n);
  let out = '';
  for (const b of bytes) out += ALPHABET[b % 36];
  return out;
}

/**
 * A new id `<prefix>_<time><random>`: time first (base 36, fixed width) so that ids sort by
 * creation time, which is what the newest-first listing and its cursor rely on.
 */
export function newId(prefix: 'run' | 'whk' | 'evt', now = Date.now()): string {
  return `${prefix}_${now.toString(36).padStart(9, '0')}${randomSuffix(12)}`;
}

/** True if `s` looks like an id this service made (used to 404 early on garbage). */
export function isRunId(s: string): boolean {
  return /^run_[0-9a-z]{21}$/.test(s);
}

// @ts-check
// Small numeric helpers.

/**
 * The q-quantile (0..1) of numbers, nearest rank; NaN for none.
 * @param {number[]} values
 * @param {number} q
 */
export function quantile(values, q) {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/**
 * n, p50, p90, p99, min, max and mean of numbers.
 * @param {number[]} values
 * @returns {import('./types.d.ts').Summary}
 */
export function summary(values) {
  return {
    n: values.length,
    p50: quantile(values, 0.5),
    p90: quantile(values, 0.9),
    p99: quantile(values, 0.99),
    min: Math.min(...values),
    max: Math.max(...values),
    mean: values.reduce((a, b) => a + b, 0) / (values.length || 1),
  };
}

/**
 * A number for a table: 3 significant digits, no exponent.
 * @param {number | null | undefined} v
 */
export function fmt(v, digits = 3) {
  if (v === undefined || v === null || Number.isNaN(v)) return '–';
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 10 ** digits) return Math.round(v).toLocaleString('en-US');
  if (a === 0) return '0';
  const decimals = Math.max(0, digits - 1 - Math.floor(Math.log10(a)));
  return v.toFixed(Math.min(decimals, 3));
}

/** A duration, a ratio and a share (0..1) for the tables, in `fmt`'s digits. */
export const ms = (/** @type {number} */ v) => `${fmt(v)} ms`;
export const x = (/** @type {number} */ v) => `${fmt(v, 2)}×`;
export const pct = (/** @type {number} */ v) => `${fmt(v * 100, 3)} %`;

/**
 * Runs `fn(i)` for i < n with at most `concurrency` at once; resolves with the results in order.
 * @template T
 * @param {number} n
 * @param {number} concurrency
 * @param {(i: number) => Promise<T>} fn
 * @returns {Promise<T[]>}
 */
export async function pool(n, concurrency, fn) {
  /** @type {T[]} */
  const out = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }),
  );
  return out;
}

/**
 * A markdown table from a header row and rows of cells, its columns padded as Biome formats them.
 * @param {string[]} header
 * @param {unknown[][]} rows
 */
export function mdTable(header, rows) {
  const cells = [header, ...rows].map((r) => r.map((c) => String(c).replace(/\|/g, '\\|')));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => [...(r[i] ?? '')].length)));
  /** @param {string[]} r */
  const line = (r) =>
    `| ${widths.map((w, i) => (r[i] ?? '') + ' '.repeat(w - [...(r[i] ?? '')].length)).join(' | ')} |`;
  return [line(cells[0]), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)].join('\n');
}

/**
 * A plain-text table for the terminal.
 * @param {string[]} header
 * @param {unknown[][]} rows
 */
export function textTable(header, rows) {
  const all = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, i) => Math.max(...all.map((r) => [...(r[i] ?? '')].length)));
  const line = (/** @type {string[]} */ r) => r.map((c, i) => c + ' '.repeat(widths[i] - [...c].length)).join('  ');
  return [line(all[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...all.slice(1).map(line)].join('\n');
}

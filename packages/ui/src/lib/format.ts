// How the inspector writes numbers, times and durations.

/** A duration: `340 ms`, `1.24 s`, `2 min 5 s`, `3 h 2 min`. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '–';
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Milliseconds between two ISO times (or from one to now), null without a start. */
export function between(
  from: string | null | undefined,
  to: string | null | undefined,
  now = Date.now(),
): number | null {
  if (!from) return null;
  const a = Date.parse(from);
  const b = to ? Date.parse(to) : now;
  return Number.isFinite(a) && Number.isFinite(b) ? b - a : null;
}

/** A count of tokens: `950`, `12.3k`, `1.20M`. */
export function tokens(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (n < 1000) return String(n);
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

/** US dollars, with as many decimals as a small cost needs. */
export function usd(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (n === 0) return '$0';
  if (n < 0.01) return `$${n.toPrecision(2)}`;
  return `$${n.toFixed(n < 1 ? 4 : 2)}`;
}

/** A time of day (local), with the date when it is not today. */
export function clock(iso: string | null | undefined, now = new Date()): string {
  if (!iso) return '–';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const time = d.toLocaleTimeString(undefined, { hour12: false });
  return d.toDateString() === now.toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

/** How long ago: `just now`, `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '–';
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return iso;
  if (ms < 2000) return 'just now';
  if (ms < 60_000) return `${Math.floor(ms / 1000)} s ago`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ago`;
  if (ms < 86_400_000) return `${Math.floor(ms / 3_600_000)} h ago`;
  return `${Math.floor(ms / 86_400_000)} d ago`;
}

/** JSON text pretty-printed when it parses, else as it is. */
export function prettyJson(text: string | null | undefined): string {
  if (text === null || text === undefined) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The first `max` characters of a text on one line. */
export function oneLine(text: string | null | undefined, max = 120): string {
  const s = (text ?? '').replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

export const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'incomplete']);
export const isTerminal = (status: string) => TERMINAL.has(status);

import { compileGlob } from './glob-match.js';

/** A compiled tool allowlist: exact names and `*`/`?` globs; no list allows every tool. */
export function compileAllowlist(globs: string[] | undefined): (name: string) => boolean {
  if (!globs) return () => true;
  // Exact names are one set lookup; each glob is a bounded scan (see compileGlob), never a regex.
  const exact = new Set(globs.filter((g) => !g.includes('*') && !g.includes('?')));
  const patterns = [...new Set(globs.filter((g) => !exact.has(g)))].map(compileGlob);
  return (name) => exact.has(name) || patterns.some((match) => match(name));
}

/** A compiled tool allowlist: exact names and `*`/`?` globs; no list allows every tool. */
export function compileAllowlist(globs: string[] | undefined): (name: string) => boolean {
  if (!globs) return () => true;
  const res = globs.map((g) => new RegExp(`^${g.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`));
  return (name) => res.some((r) => r.test(name));
}

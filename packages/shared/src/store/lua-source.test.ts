import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { luaSource } from './lua-source.js';

/** A reader over an in-memory tree of scripts, by path under scripts/. */
const reader = (files: Record<string, string>) => (url: URL) => {
  const path = url.pathname.split('/scripts/').at(-1)!;
  const text = files[path];
  if (text === undefined) throw new Error(`no such script file: ${path}`);
  return text;
};

describe('luaSource', () => {
  it('inlines each included piece once, where it is first included, and pieces that include others', () => {
    const text = luaSource(
      'main',
      reader({
        'main.lua': '--- @include "a"\n--- @include "b"\nreturn a() + b()\n',
        'includes/a.lua': 'local function a() return 1 end\n',
        'includes/b.lua': '--- @include "a"\nlocal function b() return a() end\n',
      }),
    );
    expect(text.split('local function a()')).toHaveLength(2);
    const at = ['local function a()', 'local function b()', 'return a() + b()'].map((s) => text.indexOf(s));
    expect(at).toEqual([...at].sort((x, y) => x - y));
    expect(at[0]).toBeGreaterThanOrEqual(0);
    expect(text).not.toContain('@include');
  });

  it("writes the project's constants in as Lua literals: field names, suffixes, the terminal statuses", () => {
    const text = luaSource(
      'main',
      reader({
        'main.lua':
          "redis.call('HMGET', KEYS[1], F.status, T.runningSuffix, A.decisionSuffix, U.total_tokens, UT.tool_calls)\n" +
          'return C.statusIsTerminal',
      }),
    );
    expect(text).toBe(
      "redis.call('HMGET', KEYS[1], 'status', ':running', ':d', 'u:total_tokens', 'ut:tool_calls')\n" +
        "return (status == 'completed' or status == 'failed' or status == 'cancelled' or status == 'incomplete')",
    );
  });

  it('refuses an unknown constant when the script is loaded, naming it', () => {
    expect(() => luaSource('main', reader({ 'main.lua': 'return F.statsu' }))).toThrow(
      'store script main: unknown constant F.statsu',
    );
  });

  it('loads every script of the store, with nothing left unresolved', () => {
    const dir = new URL('./scripts/', import.meta.url);
    const names = readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.lua') && !f.startsWith('includes'))
      .map((f) => f.slice(0, -4));
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) {
      const text = luaSource(name);
      expect(text, name).not.toMatch(/@include|\b(UT|[FTACU])\.[A-Za-z]/);
    }
  });
});

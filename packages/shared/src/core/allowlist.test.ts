import { describe, expect, it } from 'vitest';
import { compileAllowlist } from './allowlist.js';

const names = [
  'crm__search_contacts',
  'crm__get_contact',
  'crm__update_contact',
  'everything__echo',
  'everything__add',
  'memory__read_graph',
];
const allowed = (globs: string[] | undefined) => names.filter(compileAllowlist(globs));

describe('compileAllowlist', () => {
  it('with no list allows every tool', () => {
    expect(allowed(undefined)).toEqual(names);
    expect(compileAllowlist(undefined)('anything at all')).toBe(true);
  });

  it('an empty list allows no tool', () => {
    expect(allowed([])).toEqual([]);
  });

  it("a server glob allows that server's tools only", () => {
    expect(allowed(['crm__*'])).toEqual(['crm__search_contacts', 'crm__get_contact', 'crm__update_contact']);
  });

  it('an exact name allows that tool only (not a prefix or suffix match)', () => {
    expect(allowed(['everything__echo'])).toEqual(['everything__echo']);
    const allow = compileAllowlist(['everything__echo']);
    expect(allow('everything__echo2')).toBe(false);
    expect(allow('xeverything__echo')).toBe(false);
  });

  it('combines globs and exact names', () => {
    expect(allowed(['crm__*', 'everything__echo'])).toEqual([
      'crm__search_contacts',
      'crm__get_contact',
      'crm__update_contact',
      'everything__echo',
    ]);
  });

  it('* matches within names and ? matches exactly one character', () => {
    expect(allowed(['*__get_*'])).toEqual(['crm__get_contact']);
    expect(allowed(['*_contact'])).toEqual(['crm__get_contact', 'crm__update_contact']);
    expect(allowed(['everything__ad?'])).toEqual(['everything__add']);
    expect(compileAllowlist(['everything__ad?'])('everything__ad')).toBe(false);
    expect(compileAllowlist(['everything__ad?'])('everything__addd')).toBe(false);
    expect(allowed(['*'])).toEqual(names);
  });

  it('treats regular-expression characters in names literally', () => {
    const dot = compileAllowlist(['a.b']);
    expect(dot('a.b')).toBe(true);
    expect(dot('axb')).toBe(false);
    const plus = compileAllowlist(['a+b']);
    expect(plus('a+b')).toBe(true);
    expect(plus('aab')).toBe(false);
    expect(compileAllowlist(['a(b)'])('a(b)')).toBe(true);
    expect(compileAllowlist(['a(b)'])('ab')).toBe(false);
    expect(compileAllowlist(['a|b'])('a')).toBe(false);
    expect(compileAllowlist(['a[bc]'])('ab')).toBe(false);
    expect(compileAllowlist(['a[bc]'])('a[bc]')).toBe(true);
    expect(compileAllowlist(['^a$'])('a')).toBe(false);
    expect(compileAllowlist(['a\\d'])('a1')).toBe(false);
    expect(compileAllowlist(['a{2}'])('aa')).toBe(false);
  });

  it('does not throw on any input (a bad glob must not crash a worker)', () => {
    expect(() => compileAllowlist(['(', '[', '\\', '{', ')'])('x')).not.toThrow();
  });
});

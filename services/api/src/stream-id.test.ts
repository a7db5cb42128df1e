import { describe, expect, it } from 'vitest';
import { compareIds, isStreamId, parseStreamId } from './stream-id.js';

describe('stream ids', () => {
  it.each([
    '0',
    '0-0',
    '1700000000000-0',
    '1700000000000-42',
    '18446744073709551615-18446744073709551615',
    '00001-0001',
  ])('takes %s', (id) => {
    expect(isStreamId(id)).toBe(true);
  });

  it.each([
    ["a seq past 64 bits (the issue's id)", '1-99999999999999999999999'],
    ['a seq of 2^64', '1-18446744073709551616'],
    ['a time of 2^64', '18446744073709551616-0'],
    ['a time past 64 bits', '99999999999999999999999-1'],
    ['21 digits that are small', '000000000000000000001-0'],
    ['no seq', '1700000000000'],
    ['an empty seq', '1700000000000-'],
    ['a sign', '-1-0'],
    ['a plus', '+1-0'],
    ['spaces', ' 1-0'],
    ['a fraction', '1.5-0'],
    ['hex', '0x10-0'],
    ["Redis's own specials", '$'],
    ['a range marker', '(1-0'],
    ['garbage', 'garbage'],
    ['empty', ''],
  ])('refuses %s', (_label, id) => {
    expect(isStreamId(id)).toBe(false);
    expect(parseStreamId(id)).toBeNull();
  });

  it('compares exactly, also where a double would round', () => {
    expect(compareIds('1-9007199254740993', '1-9007199254740992')).toBe(1);
    expect(compareIds('9007199254740993-0', '9007199254740992-5')).toBe(1);
    expect(compareIds('1700000000000-2', '1700000000000-10')).toBe(-1);
    expect(compareIds('1700000000001-0', '1700000000000-10')).toBe(1);
    expect(compareIds('0', '0-0')).toBe(0);
    expect(compareIds('0', '1-0')).toBe(-1);
  });

  it('compares a resume point given with leading zeros by value', () => {
    expect(compareIds('0001700000000000-2', '1700000000000-2')).toBe(0);
    expect(compareIds('1700000000000-0010', '1700000000000-9')).toBe(1);
    expect(compareIds('09-0', '10-0')).toBe(-1);
    expect(compareIds('18446744073709551615-0', '018446744073709551614-9')).toBe(1);
  });

  it('agrees with comparing the numbers, over many random ids', () => {
    const part = () =>
      Math.random() < 0.3
        ? String(Math.floor(Math.random() * 12))
        : String(BigInt(Math.floor(Math.random() * 2 ** 53)) * BigInt(1 + Math.floor(Math.random() * 2000)));
    const pad = (p: string) => (Math.random() < 0.1 ? `00${p}` : p);
    for (let i = 0; i < 5000; i++) {
      const [am, as, bm, bs] = [part(), part(), Math.random() < 0.3 ? null : part(), part()];
      const a = `${pad(am)}-${pad(as)}`;
      const b = `${pad(bm ?? am)}-${pad(bs)}`;
      const d = BigInt(am) - BigInt(bm ?? am) || BigInt(as) - BigInt(bs);
      expect(compareIds(a, b)).toBe(d < 0n ? -1 : d > 0n ? 1 : 0);
    }
  });
});

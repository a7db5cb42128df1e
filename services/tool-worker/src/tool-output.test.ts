import { describe, expect, it } from 'vitest';
import { capToolOutput } from './tool-output.js';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const MARKER = /\n?\[output truncated[^\]]*\]$/;
const headOf = (capped: string) => capped.replace(MARKER, '');

describe('capToolOutput', () => {
  it('returns output under the cap unchanged', () => {
    expect(capToolOutput('hello', 100)).toBe('hello');
    expect(capToolOutput('', 100)).toBe('');
  });

  it('returns output of exactly the cap unchanged', () => {
    const s = 'x'.repeat(1024);
    expect(capToolOutput(s, 1024)).toBe(s);
  });

  it('cuts output over the cap to a prefix of at most the cap and marks it', () => {
    const s = 'abcdefghij'.repeat(500); // 5000 bytes
    const capped = capToolOutput(s, 1024);
    expect(capped).toMatch(MARKER);
    const head = headOf(capped);
    expect(bytes(head)).toBeLessThanOrEqual(1024);
    expect(bytes(head)).toBeGreaterThan(1000);
    expect(s.startsWith(head)).toBe(true);
  });

  it('says in the marker how large the output was and how much is shown', () => {
    const s = 'y'.repeat(5000);
    const capped = capToolOutput(s, 1024);
    const marker = capped.slice(headOf(capped).length);
    expect(marker).toContain('5000');
    expect(marker).toContain('1024');
  });

  it.each([
    ['2-byte', 'é'],
    ['3-byte', '€'],
    ['4-byte', '😀'],
  ])('never splits a %s character at the boundary', (_label, ch) => {
    const s = ch.repeat(2000);
    for (const cap of [1024, 1025, 1026, 1027]) {
      const head = headOf(capToolOutput(s, cap));
      expect(head).not.toContain('\uFFFD');
      expect(bytes(head)).toBeLessThanOrEqual(cap);
      expect(bytes(head)).toBeGreaterThan(cap - bytes(ch));
      expect(s.startsWith(head)).toBe(true);
    }
  });

  it('cuts mixed ASCII and multibyte text on a character boundary', () => {
    const s = `${'a'.repeat(1023)}😀${'b'.repeat(100)}`;
    const head = headOf(capToolOutput(s, 1024));
    expect(head).toBe('a'.repeat(1023));
  });
});

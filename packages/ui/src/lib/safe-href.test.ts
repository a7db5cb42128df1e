import { describe, expect, it } from 'vitest';
import { safeHref } from './safe-href.js';

describe('safeHref', () => {
  it('keeps http, https and mailto addresses', () => {
    expect(safeHref('https://example.com/a?b=1')).toBe('https://example.com/a?b=1');
    expect(safeHref(' http://example.com ')).toBe('http://example.com/');
    expect(safeHref('mailto:a@example.com')).toBe('mailto:a@example.com');
    expect(safeHref('//example.com/x')).toBe('https://example.com/x');
  });

  it.each([
    'javascript:alert(1)',
    ' JavaScript:alert(1)',
    'java\tscript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    '/v1/runs',
    '#top',
    'file:///etc/passwd',
  ])('refuses %s', (href) => {
    expect(safeHref(href)).toBeNull();
  });
});

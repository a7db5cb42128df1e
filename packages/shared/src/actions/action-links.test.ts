import { describe, expect, it } from 'vitest';
import { ActionLinks } from './action-links.js';

const SECRET = 'a-secret-of-at-least-thirty-two-characters';
const ID = 'act_0123456789abcdefghijk_0_1';
const OTHER = 'act_0123456789abcdefghijk_0_2';
const links = new ActionLinks({ secret: SECRET });
const NOW = Date.parse('2030-01-01T00:00:00.000Z');
const LATER = '2030-01-01T00:00:05.000Z';
const NOW_ISO = new Date(NOW).toISOString();

describe('ActionLinks', () => {
  it('opens the request it was made for, until its expiry', () => {
    const token = links.token(ID, LATER);
    expect(token).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
    expect(links.check(ID, token, NOW)).toBe('valid');
    expect(links.check(ID, token, Date.parse(LATER) - 1)).toBe('valid');
    expect(links.check(ID, token, Date.parse(LATER))).toBe('expired');
  });

  it('makes a token without expiry for a request that waits until it is answered', () => {
    const token = links.token(ID, null);
    expect(token.startsWith('n.')).toBe(true);
    expect(links.check(ID, token, Number.MAX_SAFE_INTEGER)).toBe('valid');
  });

  it('is deterministic: a request shows the same link wherever it is shown', () => {
    expect(new ActionLinks({ secret: SECRET }).token(ID, LATER)).toBe(links.token(ID, LATER));
  });

  it('refuses a token of another request', () => {
    expect(links.check(OTHER, links.token(ID, LATER), NOW)).toBe('invalid');
    expect(links.check(OTHER, links.token(ID, null), NOW)).toBe('invalid');
  });

  it('refuses a token signed with another secret', () => {
    const theirs = new ActionLinks({ secret: SECRET.toUpperCase() });
    expect(links.check(ID, theirs.token(ID, LATER), NOW)).toBe('invalid');
  });

  it('refuses a token whose expiry was moved, or dropped', () => {
    const token = links.token(ID, LATER);
    const [expiry, signature] = token.split('.');
    expect(links.check(ID, `${Number(expiry) + 60_000}.${signature}`, NOW)).toBe('invalid');
    expect(links.check(ID, `n.${signature}`, NOW)).toBe('invalid');
    // A moved expiry that has passed is still invalid, not expired: a forged token learns nothing.
    expect(links.check(ID, `${Number(expiry) - 60_000}.${signature}`, NOW + 3_600_000)).toBe('invalid');
  });

  it('refuses a truncated, extended, altered or malformed token', () => {
    const token = links.token(ID, LATER);
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    for (const bad of [
      token.slice(0, -1),
      token + 'A',
      flipped,
      token.replace('.', ''),
      `0${token}`,
      '',
      'n.',
      '.'.repeat(44),
      token.toUpperCase(),
    ]) {
      expect(links.check(ID, bad, NOW), bad).toBe('invalid');
    }
    for (const bad of [undefined, null, 42, [token]]) expect(links.check(ID, bad, NOW)).toBe('invalid');
  });

  it('refuses anything that is not an action id, whatever the token', () => {
    for (const id of ['run_0123456789abcdefghijk', `${ID}/x`, '', 'act_x'])
      expect(links.check(id, links.token(id, LATER), NOW)).toBe('invalid');
  });

  it('builds a path without PUBLIC_URL and an absolute URL with it', () => {
    const token = links.token(ID, LATER);
    expect(links.url(ID, LATER)).toBe(`/v1/actions/${ID}/respond?token=${token}`);
    const abs = new ActionLinks({ secret: SECRET, publicUrl: 'https://agentq.example.com/base/' });
    expect(abs.url(ID, LATER)).toBe(`https://agentq.example.com/base/v1/actions/${ID}/respond?token=${token}`);
    expect(
      abs.decorate({
        id: ID,
        type: 'approval',
        run_id: 'run_0123456789abcdefghijk',
        tool_call_id: 'c',
        name: 't',
        arguments: '{}',
        created_at: NOW_ISO,
        expires_at: LATER,
      }).respond_url,
    ).toBe(abs.url(ID, LATER));
  });

  it('refuses a short secret', () => {
    expect(() => new ActionLinks({ secret: 'x'.repeat(31) })).toThrow(/at least 32 characters/);
  });
});

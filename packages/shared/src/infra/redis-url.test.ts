import { describe, expect, it } from 'vitest';
import { parseRedisUrl, redactUrl } from './redis-url.js';

describe('parseRedisUrl', () => {
  it('reads one Redis, with or without TLS', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({
      kind: 'single',
      url: 'redis://127.0.0.1:6379',
      tls: false,
    });
    expect(parseRedisUrl('rediss://u:p@cache.example:6380/2')).toMatchObject({ kind: 'single', tls: true });
  });

  it('reads a Cluster: its seed nodes, user and password, TLS', () => {
    expect(parseRedisUrl('redis+cluster://10.0.0.1:7000,10.0.0.2:7001,[::1]:7002')).toEqual({
      kind: 'cluster',
      tls: false,
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
    });
    expect(parseRedisUrl('rediss+cluster://app:s%40cret@a:1,b:2')).toMatchObject({
      kind: 'cluster',
      tls: true,
      username: 'app',
      password: 's@cret',
    });
  });

  it('reads a Sentinel group: its sentinels, the master name, and a sentinel password if given', () => {
    expect(parseRedisUrl('redis+sentinel://:pw@s1:26379,s2:26379/mymaster?sentinel_password=sp')).toEqual({
      kind: 'sentinel',
      tls: false,
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      masterName: 'mymaster',
      password: 'pw',
      sentinelPassword: 'sp',
    });
  });

  it.each([
    ['http://127.0.0.1:6379', /must be redis/],
    ['redis+cluster://a:1,b', /"b" .* is not host:port/],
    ['redis+cluster://a:99999', /not host:port/],
    ['redis+cluster://a:1/0', /no path/],
    ['redis+sentinel://s1:26379', /\/<master-name>/],
    ['redis://h:p1,h:p2', /not a valid URL/],
    ['redis+cluster://a:1,b:2?tls=true', /takes no \?query/],
    ['redis+sentinel://s1:1/m?tls=true', /takes only \?sentinel_password=/],
  ])('refuses %s with a message that says why', (url, why) => {
    expect(() => parseRedisUrl(url)).toThrow(why);
  });

  it('keeps a + in a sentinel password, as in the password itself', () => {
    expect(parseRedisUrl('redis+sentinel://:a+b%2Bc@s1:26379/m?sentinel_password=a+b%2Bc')).toMatchObject({
      password: 'a+b+c',
      sentinelPassword: 'a+b+c',
    });
  });

  it.each([
    ['redis://:100%@h:1', /password .* not valid percent-encoding/],
    ['redis://u%zz:p@h:1', /user .* not valid percent-encoding/],
    ['redis+cluster://app:100%@a:1,b:2', /password .* not valid percent-encoding/],
    ['redis+sentinel://s1:1/m?sentinel_password=100%', /sentinel_password .* not valid percent-encoding/],
  ])('refuses %s, whose % is not percent-encoding, with a message instead of a crash', (url, why) => {
    expect(() => parseRedisUrl(url)).toThrow(why);
  });

  it.each([
    'redis+cluster://app:s3cr@t+K@a:1,b:2',
    'redis+cluster://app:s3cr/t+K@a:1,nope',
    'redis+sentinel://:s3cr@t+K@s1:1/m',
  ])('never echoes a password with a raw @ or / (%s)', (url) => {
    expect(() => parseRedisUrl(url)).toThrow();
    try {
      parseRedisUrl(url);
    } catch (err) {
      expect((err as Error).message).not.toMatch(/s3cr|t\+K/);
    }
  });

  it('hides user, password and sentinel password when a URL is shown', () => {
    expect(redactUrl('redis+cluster://app:s3cr/t@x@a:1,b:2')).toBe('redis+cluster://***@a:1,b:2');
    expect(redactUrl('redis+sentinel://s1:1/m?sentinel_password=sp&x=1')).toBe(
      'redis+sentinel://s1:1/m?sentinel_password=***&x=1',
    );
    expect(redactUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
  });

  it('never puts the password in its message', () => {
    expect(() => parseRedisUrl('redis+cluster://u:topsecret@a:1,nope')).toThrow(/\/\/\*\*\*@/);
    try {
      parseRedisUrl('redis+cluster://u:topsecret@a:1,nope');
    } catch (err) {
      expect((err as Error).message).not.toContain('topsecret');
    }
  });
});

import { describe, expect, it } from 'vitest';
import { ConfigError } from '@agentq/shared/core';
import { loadApiConfig } from './config.js';

function problems(env: Record<string, string | undefined>): string[] {
  try {
    loadApiConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected the environment to be refused');
}

describe('loadApiConfig', () => {
  it('has the documented defaults', () => {
    expect(loadApiConfig({})).toMatchObject({
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: 'agentq',
      PORT: 3000,
      API_KEYS: [],
      WEBHOOK_ALLOW_PRIVATE: false,
      LOG_LEVEL: 'info',
    });
    expect(loadApiConfig({}).MODEL).toBeUndefined();
  });

  it('has size limits matching the contract (1 MB input, 32 MB context, 34 MB body)', () => {
    const cfg = loadApiConfig({});
    expect(cfg.MAX_INPUT_BYTES).toBe(1024 * 1024);
    expect(cfg.MAX_CONTEXT_BYTES).toBe(32 * 1024 * 1024);
    expect(cfg.MAX_BODY_BYTES).toBe(34 * 1024 * 1024);
  });

  it('splits API_KEYS on commas and trims them', () => {
    expect(loadApiConfig({ API_KEYS: 'key-aaaaaaaa, key-bbbbbbbb ,' }).API_KEYS).toEqual([
      'key-aaaaaaaa',
      'key-bbbbbbbb',
    ]);
  });

  it('treats empty strings as unset', () => {
    const cfg = loadApiConfig({ PORT: '', API_KEYS: '', MODEL: '', REDIS_URL: '', MAX_BODY_BYTES: '' });
    expect(cfg.PORT).toBe(3000);
    expect(cfg.API_KEYS).toEqual([]);
    expect(cfg.MODEL).toBeUndefined();
    expect(cfg.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(cfg.MAX_BODY_BYTES).toBe(34 * 1024 * 1024);
  });

  it('takes PORT, HOST and the size limits from the environment', () => {
    expect(
      loadApiConfig({ PORT: '8080', HOST: '127.0.0.1', MAX_BODY_BYTES: '65536', MAX_INPUT_BYTES: '16384' }),
    ).toMatchObject({
      PORT: 8080,
      HOST: '127.0.0.1',
      MAX_BODY_BYTES: 65536,
      MAX_INPUT_BYTES: 16384,
    });
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['REDIS_URL', 'foo'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['QUEUE_PREFIX', 'has:colon'],
    ['LOG_LEVEL', 'verbose'],
    ['MAX_BODY_BYTES', 'big'],
    ['WEBHOOK_ALLOW_PRIVATE', 'sure'],
    ['PUBLIC_URL', 'agentq.example.com'],
    ['PUBLIC_URL', 'ftp://agentq.example.com'],
    ['PUBLIC_URL', 'https://agentq.example.com/?x=1'],
  ])('refuses %s=%s with one line naming it and the bad value', (name, value) => {
    const p = problems({ [name]: value });
    expect(p).toHaveLength(1);
    expect(p[0].startsWith(`${name}:`)).toBe(true);
    expect(p[0]).toContain(JSON.stringify(value));
  });

  it('reports every bad variable, one line each', () => {
    const p = problems({ PORT: 'abc', REDIS_URL: 'foo', LOG_LEVEL: 'loud' });
    expect(p).toHaveLength(3);
    expect(p.map((l) => l.split(':')[0]).sort()).toEqual(['LOG_LEVEL', 'PORT', 'REDIS_URL']);
  });

  it('never echoes API keys in its message', () => {
    const p = problems({ API_KEYS: 'a-long-valid-key-123,short' });
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(/^API_KEYS:/);
    expect(p[0]).not.toContain('a-long-valid-key-123');
    expect(p[0]).not.toContain('short"');
  });

  it('never echoes the webhook secret', () => {
    // WEBHOOK_SECRET cannot be invalid once set; a bad neighbour must not drag it into the message.
    const p = problems({ WEBHOOK_SECRET: 'whsec_topsecretvalue', PORT: 'abc' });
    expect(p.join('\n')).not.toContain('topsecretvalue');
  });

  it('takes ACTION_LINK_SECRET of 32 characters or more, and PUBLIC_URL', () => {
    const cfg = loadApiConfig({ ACTION_LINK_SECRET: 'x'.repeat(32), PUBLIC_URL: 'https://agentq.example.com/base' });
    expect(cfg).toMatchObject({ ACTION_LINK_SECRET: 'x'.repeat(32), PUBLIC_URL: 'https://agentq.example.com/base' });
    expect(loadApiConfig({}).ACTION_LINK_SECRET).toBeUndefined();
  });

  it('refuses a short ACTION_LINK_SECRET, naming it without echoing it', () => {
    const p = problems({ ACTION_LINK_SECRET: 'short-but-secret-value' });
    expect(p).toEqual([
      'ACTION_LINK_SECRET: must be at least 32 characters (e.g. ' +
        'the output of "openssl rand -base64 32") (value hidden)',
    ]);
  });
});

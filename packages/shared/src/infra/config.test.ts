import { describe, expect, it } from 'vitest';
import { loadAgentWorkerConfig } from '@agentq/agent-worker';
import { loadToolWorkerConfig } from '@agentq/tool-worker';
import { baseEnvSchema, parseEnv, workerEnvSchema } from './config.js';
import { ConfigError } from '../core/errors.js';

/** The problems parseEnv reports for `env`, or fails the test if it accepts it. */
function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const p = (err as ConfigError).problems;
    for (const line of p) expect(line).not.toContain('\n');
    return p;
  }
  throw new Error('expected the environment to be refused');
}

describe('parseEnv with the base schema', () => {
  it('fills the documented defaults for an empty environment', () => {
    expect(parseEnv(baseEnvSchema, {})).toMatchObject({
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: 'agentq',
      LOG_LEVEL: 'info',
    });
  });

  it('takes given values', () => {
    expect(
      parseEnv(baseEnvSchema, {
        REDIS_URL: 'rediss://h.example:6380/2',
        QUEUE_PREFIX: 'prod-eu.1',
        LOG_LEVEL: 'debug',
      }),
    ).toMatchObject({
      REDIS_URL: 'rediss://h.example:6380/2',
      QUEUE_PREFIX: 'prod-eu.1',
      LOG_LEVEL: 'debug',
    });
  });

  it('treats an empty string as unset (the default applies)', () => {
    expect(parseEnv(baseEnvSchema, { REDIS_URL: '', QUEUE_PREFIX: '', LOG_LEVEL: '' })).toMatchObject({
      REDIS_URL: 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: 'agentq',
      LOG_LEVEL: 'info',
    });
  });

  it('ignores variables it does not know', () => {
    expect(() => parseEnv(baseEnvSchema, { PATH: '/usr/bin', HOME: '/root', SOMETHING_ELSE: 'x' })).not.toThrow();
  });

  it('reports one line per bad variable, each naming it and the value', () => {
    const p = problems(() => parseEnv(baseEnvSchema, { REDIS_URL: 'foo', QUEUE_PREFIX: 'a:b', LOG_LEVEL: 'loud' }));
    expect(p).toHaveLength(3);
    expect(p.find((l) => l.startsWith('REDIS_URL'))).toContain('"foo"');
    expect(p.find((l) => l.startsWith('QUEUE_PREFIX'))).toContain('"a:b"');
    expect(p.find((l) => l.startsWith('LOG_LEVEL'))).toContain('"loud"');
  });

  it('does not echo a password with a raw / inside a bad REDIS_URL', () => {
    const p = problems(() => parseEnv(baseEnvSchema, { REDIS_URL: 'redis+cluster://app:s3cr/t+K@a:1,b:2' }));
    expect(p[0]).toMatch(/^REDIS_URL/);
    expect(p.join('\n')).not.toMatch(/s3cr|t\+K/);
  });

  it('does not echo a password inside a bad REDIS_URL', () => {
    const p = problems(() => parseEnv(baseEnvSchema, { REDIS_URL: 'redis//:s3cr3t-pa55@redis.internal:6379' }));
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(/^REDIS_URL/);
    expect(p[0]).not.toContain('s3cr3t-pa55');
  });
});

describe('parseEnv with the worker schema', () => {
  it('fills the documented defaults', () => {
    const cfg = parseEnv(workerEnvSchema, {});
    expect(cfg).toMatchObject({ WEBHOOK_ALLOW_PRIVATE: false });
    expect(cfg.MODEL).toBeUndefined();
    expect(cfg.MCP_CONFIG).toBeUndefined();
    expect(cfg.OPENAI_BASE_URL).toBeUndefined();
    // "sized for I/O-bound work (tens to hundreds)"
    expect(cfg.AGENT_CONCURRENCY).toBeGreaterThanOrEqual(10);
    expect(cfg.TOOL_CONCURRENCY).toBeGreaterThanOrEqual(10);
  });

  it('coerces numbers and booleans from strings', () => {
    const cfg = parseEnv(workerEnvSchema, {
      AGENT_CONCURRENCY: '7',
      TOOL_CONCURRENCY: '300',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    expect(cfg).toMatchObject({ AGENT_CONCURRENCY: 7, TOOL_CONCURRENCY: 300, WEBHOOK_ALLOW_PRIVATE: true });
    expect(parseEnv(workerEnvSchema, { WEBHOOK_ALLOW_PRIVATE: 'false' }).WEBHOOK_ALLOW_PRIVATE).toBe(false);
  });

  it('treats MODEL="" and OPENAI_BASE_URL="" as unset', () => {
    const cfg = parseEnv(workerEnvSchema, { MODEL: '', OPENAI_BASE_URL: '', MCP_CONFIG: '', WEBHOOK_SECRET: '' });
    expect(cfg.MODEL).toBeUndefined();
    expect(cfg.OPENAI_BASE_URL).toBeUndefined();
    expect(cfg.MCP_CONFIG).toBeUndefined();
    expect(cfg.WEBHOOK_SECRET).toBeUndefined();
  });

  it.each([
    ['AGENT_CONCURRENCY', '0'],
    ['AGENT_CONCURRENCY', 'lots'],
    ['AGENT_CONCURRENCY', '2.5'],
    ['TOOL_CONCURRENCY', '-1'],
    ['OPENAI_BASE_URL', 'not a url'],
    // A forgotten scheme parses as the URL scheme "localhost:"; every model call would then fail.
    ['OPENAI_BASE_URL', 'localhost:11434/v1'],
    ['OPENAI_BASE_URL', 'ftp://models.example.com/v1'],
    ['WEBHOOK_ALLOW_PRIVATE', 'maybe'],
  ])('refuses %s=%s with one line naming it', (name, value) => {
    const p = problems(() => parseEnv(workerEnvSchema, { [name]: value }));
    expect(p).toHaveLength(1);
    expect(p[0].startsWith(`${name}:`)).toBe(true);
  });

  it('lists every bad variable at once', () => {
    const p = problems(() =>
      parseEnv(workerEnvSchema, {
        REDIS_URL: 'foo',
        AGENT_CONCURRENCY: '0',
        TOOL_CONCURRENCY: 'x',
        OPENAI_BASE_URL: 'nope',
      }),
    );
    expect(p.map((l) => l.split(':')[0]).sort()).toEqual([
      'AGENT_CONCURRENCY',
      'OPENAI_BASE_URL',
      'REDIS_URL',
      'TOOL_CONCURRENCY',
    ]);
  });
});

describe.each([
  ['agent-worker', loadAgentWorkerConfig],
  ['tool-worker', loadToolWorkerConfig],
] as const)('the %s configuration', (_name, load) => {
  it('starts from an empty environment with the defaults', () => {
    expect(load({})).toMatchObject({ REDIS_URL: 'redis://127.0.0.1:6379', QUEUE_PREFIX: 'agentq', LOG_LEVEL: 'info' });
  });

  it('refuses bad variables, one line each', () => {
    const p = problems(() => load({ REDIS_URL: 'foo', AGENT_CONCURRENCY: '0', TOOL_CONCURRENCY: '0' }));
    expect(p.map((l) => l.split(':')[0]).sort()).toEqual(['AGENT_CONCURRENCY', 'REDIS_URL', 'TOOL_CONCURRENCY']);
  });

  it('does not read process.env when given an environment', () => {
    const before = process.env.QUEUE_PREFIX;
    process.env.QUEUE_PREFIX = 'from-process-env';
    try {
      expect(load({}).QUEUE_PREFIX).toBe('agentq');
    } finally {
      if (before === undefined) delete process.env.QUEUE_PREFIX;
      else process.env.QUEUE_PREFIX = before;
    }
  });
});

describe('the tool-worker configuration of signed links', () => {
  it(
    'takes ACTION_LINK_SECRET (for the links in its webhooks) ' +
      'and PUBLIC_URL, and refuses a short secret without echoing it',
    () => {
      expect(
        loadToolWorkerConfig({ ACTION_LINK_SECRET: 's'.repeat(40), PUBLIC_URL: 'http://10.0.0.5:3000' }),
      ).toMatchObject({ ACTION_LINK_SECRET: 's'.repeat(40), PUBLIC_URL: 'http://10.0.0.5:3000' });
      const p = problems(() => loadToolWorkerConfig({ ACTION_LINK_SECRET: 'tooshort-secret' }));
      expect(p).toHaveLength(1);
      expect(p[0]).toMatch(/^ACTION_LINK_SECRET: must be at least 32 characters/);
      expect(p[0]).not.toContain('tooshort-secret');
    },
  );
});

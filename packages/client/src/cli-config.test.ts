import { describe, expect, it } from 'vitest';
import { CliConfigError, loadCliConfig } from './cli-config.js';

const problems = (env: Record<string, string>) => {
  try {
    loadCliConfig(env);
  } catch (err) {
    if (err instanceof CliConfigError) return err.problems;
    throw err;
  }
  throw new Error('loadCliConfig accepted it');
};

describe('loadCliConfig', () => {
  it('gives the defaults for an empty environment, and treats empty values as unset', () => {
    expect(loadCliConfig({})).toEqual({ url: 'http://127.0.0.1:3000', color: true });
    expect(loadCliConfig({ AGENTQ_URL: '', AGENTQ_API_KEY: '', NO_COLOR: '' })).toEqual({
      url: 'http://127.0.0.1:3000',
      color: true,
    });
  });

  it('takes the URL, the key and NO_COLOR', () => {
    expect(
      loadCliConfig({ AGENTQ_URL: 'https://agentq.example.com/', AGENTQ_API_KEY: 'sk-test-1234', NO_COLOR: '1' }),
    ).toEqual({
      url: 'https://agentq.example.com/',
      apiKey: 'sk-test-1234',
      color: false,
    });
  });

  it('refuses a URL that is not http(s), in one line naming the variable and the value', () => {
    for (const url of ['localhost:3000', 'ftp://host', 'not a url']) {
      expect(problems({ AGENTQ_URL: url })).toEqual([
        `AGENTQ_URL: must be an http:// or https:// URL (got ${JSON.stringify(url)})`,
      ]);
    }
  });

  it('refuses a key that cannot go in a header, without showing it', () => {
    const lines = problems({ AGENTQ_API_KEY: 'sk secret\n' });
    expect(lines).toEqual(['AGENTQ_API_KEY: must be printable ASCII without spaces (value hidden)']);
    expect(lines.join('')).not.toContain('secret');
  });

  it('lists every bad variable at once, one line each', () => {
    expect(problems({ AGENTQ_URL: 'ftp://x', AGENTQ_API_KEY: 'ä' }).map((l) => l.split(':')[0])).toEqual([
      'AGENTQ_URL',
      'AGENTQ_API_KEY',
    ]);
  });

  it('reads process.env only when given no environment', () => {
    const saved = process.env.AGENTQ_URL;
    process.env.AGENTQ_URL = 'http://from-process-env:1';
    try {
      expect(loadCliConfig({}).url).toBe('http://127.0.0.1:3000');
      expect(loadCliConfig().url).toBe('http://from-process-env:1');
    } finally {
      if (saved === undefined) delete process.env.AGENTQ_URL;
      else process.env.AGENTQ_URL = saved;
    }
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@agentq/shared/core';
import { loadAgentWorkerConfig } from './config.js';
import { Providers } from './providers.js';
import { loadProviders } from './providers-config.js';

const dir = mkdtempSync(join(tmpdir(), 'agentq-providers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (content: unknown) => {
  const path = join(dir, `p${n++}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
};
const problems = (load: () => unknown): string[] => {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  return [];
};
const good = {
  default: 'openai',
  providers: {
    openai: { base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_KEY', rate_limit: '500/60000' },
    local: { base_url: 'http://127.0.0.1:11434/v1', headers: { 'x-team': 'blue' }, concurrency: 4 },
  },
};

describe('PROVIDERS_CONFIG', () => {
  it('gives each provider its key from the variable it names, its headers, limits and prices', () => {
    const cfg = loadProviders(file(good), { OPENAI_KEY: 'sk-1' });
    expect(cfg.default).toBe('openai');
    expect(cfg.providers).toEqual([
      {
        name: 'openai',
        baseUrl: 'https://api.openai.com/v1',
        apiKey: 'sk-1',
        headers: {},
        rateLimit: { max: 500, ms: 60000 },
        prices: {},
      },
      {
        name: 'local',
        baseUrl: 'http://127.0.0.1:11434/v1',
        headers: { 'x-team': 'blue' },
        concurrency: 4,
        prices: {},
      },
    ]);
  });

  it.each([
    [{ ...good, surprise: 1 }, 'PROVIDERS_CONFIG: surprise: unknown field'],
    [
      { ...good, providers: { ...good.providers, local: { ...good.providers.local, conncurrency: 2 } } },
      'PROVIDERS_CONFIG: providers.local.conncurrency: unknown field',
    ],
    [
      { ...good, providers: { ...good.providers, local: { ...good.providers.local, rate_limit: '10 per minute' } } },
      'PROVIDERS_CONFIG: providers.local.rate_limit: must be <max calls>/<milliseconds>',
    ],
    [
      { ...good, providers: { ...good.providers, local: { ...good.providers.local, rate_limit: '0/1000' } } },
      'PROVIDERS_CONFIG: providers.local.rate_limit: must be <max calls>/<milliseconds>',
    ],
    [{ ...good, default: 'azure' }, 'PROVIDERS_CONFIG: default: names no provider of "providers" (openai, local)'],
    [
      { ...good, providers: { ...good.providers, 'Bad/Name': { base_url: 'http://x' } } },
      'PROVIDERS_CONFIG: providers.Bad/Name: 1-64 of a-z 0-9 _ -',
    ],
    [
      { ...good, providers: { ...good.providers, local: { base_url: 'ftp://x' } } },
      'PROVIDERS_CONFIG: providers.local.base_url: must be an http:// or https:// URL',
    ],
  ])('refuses a bad file with one line naming the field (%#)', (content, line) => {
    const p = problems(() => loadProviders(file(content), { OPENAI_KEY: 'sk-1' }));
    expect(p).toHaveLength(1);
    expect(p[0]).toContain(line);
  });

  it('refuses a key variable that is not set, naming it, and a file that is not JSON', () => {
    expect(problems(() => loadProviders(file(good), {}))).toEqual([
      'PROVIDERS_CONFIG: providers.openai.api_key_env: the variable OPENAI_KEY is not set (it holds the key)',
    ]);
    expect(problems(() => loadProviders(file('{"default": '), {}))[0]).toMatch(
      /^PROVIDERS_CONFIG: cannot read .* as JSON/,
    );
  });

  it('stops the agent-worker at start, with every bad variable and the file’s problems together', () => {
    const p = problems(() => loadAgentWorkerConfig({ PROVIDERS_CONFIG: file(good), AGENT_CONCURRENCY: 'many' }, []));
    expect(p.map((l) => l.split(':')[0]).sort()).toEqual(['AGENT_CONCURRENCY', 'PROVIDERS_CONFIG']);
    expect(loadAgentWorkerConfig({ PROVIDERS_CONFIG: file(good), OPENAI_KEY: 'k' }, []).providers?.default).toBe(
      'openai',
    );
    expect(loadAgentWorkerConfig({}, []).providers).toBeUndefined();
  });
});

describe('model routing', () => {
  it('sends "<provider>/<model>" to the provider as <model>, and any other model to the default as it is', () => {
    const cfg = loadProviders(file(good), { OPENAI_KEY: 'sk-1' });
    const providers = Providers.fromConfig(cfg, () => ({}) as never, {} as never);
    const route = (m: string) => {
      const r = providers.route(m);
      return [r.provider.name, r.model];
    };
    expect(route('local/llama3.1')).toEqual(['local', 'llama3.1']);
    expect(route('openai/gpt-4o')).toEqual(['openai', 'gpt-4o']);
    expect(route('gpt-4o')).toEqual(['openai', 'gpt-4o']);
    expect(route('meta-llama/Llama-3-8b')).toEqual(['openai', 'meta-llama/Llama-3-8b']);
  });
});

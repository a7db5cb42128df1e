import { describe, expect, it } from 'vitest';
import { ConfigError } from '@agentq/shared/core';
import { loadAgentWorkerConfig } from './config.js';

const problems = (load: () => unknown): string[] => {
  try {
    load();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  return [];
};

describe('the agent-worker configuration of model calls', () => {
  it('gives model calls no proxy while proxies are off, whatever the proxy variables say', () => {
    const cfg = loadAgentWorkerConfig({ HTTP_PROXY: 'not a url', HTTPS_PROXY: 'http://proxy:3128' }, []);
    expect(cfg.modelProxyEnv).toBeUndefined();
  });

  it.each([
    ['NODE_USE_ENV_PROXY=1', { NODE_USE_ENV_PROXY: '1' }, []],
    ['--use-env-proxy in NODE_OPTIONS', { NODE_OPTIONS: '--max-old-space-size=384 --use-env-proxy' }, []],
    ['--use-env-proxy on the command line', {}, ['--use-env-proxy']],
  ])('with proxies on (%s), gives model calls the proxy variables set, and only those', (_how, on, argv) => {
    const cfg = loadAgentWorkerConfig(
      { ...on, HTTPS_PROXY: 'http://proxy:3128', no_proxy: 'localhost,.internal', REDIS_URL: 'redis://r:6379' },
      argv,
    );
    expect(cfg.modelProxyEnv).toEqual({ HTTPS_PROXY: 'http://proxy:3128', no_proxy: 'localhost,.internal' });
  });

  it('refuses a proxy that is not an http(s) URL when proxies are on, one line each, without its password', () => {
    const p = problems(() =>
      loadAgentWorkerConfig(
        { NODE_USE_ENV_PROXY: '1', HTTP_PROXY: 'proxy:3128', https_proxy: 'socks5://u:secret@proxy:1080' },
        [],
      ),
    );
    expect(p.map((l) => l.split(':')[0]).sort()).toEqual(['HTTP_PROXY', 'https_proxy']);
    expect(p.join('\n')).toMatch(/^HTTP_PROXY: must be an http:\/\/ or https:\/\/ URL of a proxy/m);
    expect(p.join('\n')).not.toContain('secret');
  });

  it('says what NODE_USE_ENV_PROXY takes', () => {
    expect(problems(() => loadAgentWorkerConfig({ NODE_USE_ENV_PROXY: 'true' }, []))).toEqual([
      'NODE_USE_ENV_PROXY: must be 1 (proxies on) or 0 (got "true")',
    ]);
  });

  it('takes MODEL_ANSWERS_IN_FLIGHT_MB (unset: the default derived from the heap) and refuses a bad one', () => {
    expect(loadAgentWorkerConfig({}, []).MODEL_ANSWERS_IN_FLIGHT_MB).toBeUndefined();
    expect(loadAgentWorkerConfig({ MODEL_ANSWERS_IN_FLIGHT_MB: '48' }, []).MODEL_ANSWERS_IN_FLIGHT_MB).toBe(48);
    const p = problems(() => loadAgentWorkerConfig({ MODEL_ANSWERS_IN_FLIGHT_MB: '0' }, []));
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(/^MODEL_ANSWERS_IN_FLIGHT_MB: /);
  });
});

import { describe, expect, it } from 'vitest';
import { loadAgentWorkerConfig } from '@agentq/agent-worker';
import { loadApiConfig } from '@agentq/api';
import { loadToolWorkerConfig } from '@agentq/tool-worker';
import { ConfigError } from '../core/errors.js';

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected the environment to be refused');
}

describe('METRICS_PORT and HOST (workers)', () => {
  it.each([
    ['agent-worker', loadAgentWorkerConfig],
    ['tool-worker', loadToolWorkerConfig],
  ] as const)('%s: unset means no metrics server; a port (0 = any free one) and HOST bind it', (_, load) => {
    expect(load({}).METRICS_PORT).toBeUndefined();
    expect(load({}).HOST).toBe('0.0.0.0');
    expect(load({ METRICS_PORT: '9464', HOST: '127.0.0.1' })).toMatchObject({ METRICS_PORT: 9464, HOST: '127.0.0.1' });
    expect(load({ METRICS_PORT: '0' }).METRICS_PORT).toBe(0);
    expect(problems(() => load({ METRICS_PORT: 'nine' }))).toEqual([
      expect.stringMatching(/^METRICS_PORT: .*\(got "nine"\)$/),
    ]);
    expect(problems(() => load({ METRICS_PORT: '70000' }))).toEqual([expect.stringMatching(/^METRICS_PORT: /)]);
  });
});

describe('OTEL_EXPORTER_OTLP_ENDPOINT (every service)', () => {
  it.each([
    ['api', loadApiConfig],
    ['agent-worker', loadAgentWorkerConfig],
    ['tool-worker', loadToolWorkerConfig],
  ] as const)('%s: unset means tracing off; an http(s) URL turns it on', (_, load) => {
    expect(load({}).OTEL_EXPORTER_OTLP_ENDPOINT).toBeUndefined();
    expect(load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318' }).OTEL_EXPORTER_OTLP_ENDPOINT).toBe(
      'http://otel-collector:4318',
    );
    expect(problems(() => load({ OTEL_EXPORTER_OTLP_ENDPOINT: 'otel-collector:4318' }))).toEqual([
      expect.stringMatching(/^OTEL_EXPORTER_OTLP_ENDPOINT: /),
    ]);
  });
});

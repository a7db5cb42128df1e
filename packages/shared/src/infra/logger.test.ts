import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, lazyChild } from './logger.js';

/** A logger writing into an array of parsed JSON lines. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, logger: createLogger({ service: 'test', destination }) };
}

describe('createLogger', () => {
  it('writes JSON lines with service, level and an ISO time', () => {
    const { lines, logger } = capture();
    logger.info({ run_id: 'run_1', job_id: 'run_1-t0', depth: 0 }, 'hello');
    expect(lines[0]).toMatchObject({
      service: 'test',
      level: 30,
      msg: 'hello',
      run_id: 'run_1',
      job_id: 'run_1-t0',
      depth: 0,
    });
    expect(String(lines[0].time)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('redacts API keys, webhook secrets and provider keys wherever they are logged', () => {
    const { lines, logger } = capture();
    logger.info(
      {
        apiKey: 'sk-live-1',
        secret: 'whsec_top',
        webhook: { url: 'https://example.com/hook', secret: 'hook-secret' },
        spec: { model: 'gpt', webhook: { url: 'https://example.com/hook', secret: 'spec-secret' } },
        headers: { authorization: 'Bearer key-123', Authorization: 'Bearer key-456' },
        cfg: {
          OPENAI_API_KEY: 'sk-provider',
          API_KEYS: ['key-one-long'],
          WEBHOOK_SECRET: 'default-secret',
          MODEL: 'gpt-4o',
        },
        server: { command: 'node', env: { GITHUB_TOKEN: 'ghp_x' }, headers: { Authorization: 'Bearer mcp' } },
      },
      'with secrets',
    );
    // The fields logged above, as they come out.
    const line = lines[0] as {
      apiKey: unknown;
      webhook: unknown;
      spec: { webhook: { secret: unknown } };
      headers: { authorization: unknown };
      cfg: unknown;
      server: unknown;
    };
    const text = JSON.stringify(line);
    for (const secret of [
      'sk-live-1',
      'whsec_top',
      'hook-secret',
      'spec-secret',
      'key-123',
      'key-456',
      'sk-provider',
      'key-one-long',
      'default-secret',
      'ghp_x',
      'Bearer mcp',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(line.apiKey).toBe('[redacted]');
    expect(line.webhook).toEqual({ url: 'https://example.com/hook', secret: '[redacted]' });
    expect(line.spec.webhook.secret).toBe('[redacted]');
    expect(line.headers.authorization).toBe('[redacted]');
    expect(line.cfg).toMatchObject({
      OPENAI_API_KEY: '[redacted]',
      API_KEYS: '[redacted]',
      WEBHOOK_SECRET: '[redacted]',
      MODEL: 'gpt-4o',
    });
    expect(line.server).toMatchObject({ command: 'node', env: '[redacted]', headers: { Authorization: '[redacted]' } });
  });

  it('adds no trace fields outside a traced span', () => {
    const { lines, logger } = capture();
    logger.info('plain');
    expect(lines[0]).not.toHaveProperty('trace_id');
  });
});

describe('lazyChild', () => {
  it('makes no child for levels that are off, and logs with its bindings when on', () => {
    const lines: string[] = [];
    const dest = new Writable({
      write: (c, _e, cb) => {
        lines.push(String(c));
        cb();
      },
    });
    const logger = createLogger({ service: 't', level: 'warn', destination: dest });
    let made = 0;
    const orig = logger.child.bind(logger);
    logger.child = ((b: Record<string, unknown>) => {
      made++;
      return orig(b);
    }) as typeof logger.child;
    const log = lazyChild(logger, { run_id: 'run_x', depth: 2 });
    log.debug('quiet');
    log.info('quiet too');
    expect(made).toBe(0);
    log.warn({ attempt: 2 }, 'loud');
    log.error('louder');
    expect(made).toBe(1);
    const parsed = lines.map((l) => JSON.parse(l));
    expect(parsed.map((p) => [p.msg, p.run_id, p.depth])).toEqual([
      ['loud', 'run_x', 2],
      ['louder', 'run_x', 2],
    ]);
    expect(parsed[0].attempt).toBe(2);
  });
});

import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { untilRedisAnswers } from '@agentq/shared/infra';
import { freePort, spawnRedisServer, type SpawnedRedis } from '../fixtures/redis.js';
import { waitFor } from '../fixtures/wait.js';

// Waiting for Redis at a worker's start: each reason said once, the reason current, and a wait
// that its caller can end.
const servers: SpawnedRedis[] = [];
afterAll(() => Promise.all(servers.map((s) => s.stop())));

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write: (chunk, _enc, done) => {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push((JSON.parse(l) as { msg: string }).msg);
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, sink) };
}

describe('untilRedisAnswers', () => {
  it('says why while nothing listens, then why Redis refuses once it does, then that it answers', async () => {
    const port = await freePort();
    const { lines, logger } = capture();
    let done = false;
    const waiting = untilRedisAnswers(`redis://app:pw@127.0.0.1:${port}`, logger, { retryMs: 50 }).then(
      () => (done = true),
    );
    await waitFor(() => lines.some((l) => /waiting for Redis: nothing listens there \(connect ECONNREFUSED/.test(l)), {
      what: 'the first reason',
    });
    // Redis comes up, but the user may not PING: the reason changes with it.
    const acl = [
      '--user',
      'default',
      'off',
      '--user',
      'admin',
      'on',
      '>adminpw',
      '~*',
      '&*',
      '+@all',
      '--user',
      'app',
      'on',
      '>pw',
      '~*',
      '&*',
      '+@all',
      '-ping',
    ];
    servers.push(await spawnRedisServer({ port, args: acl, client: { username: 'admin', password: 'adminpw' } }));
    await waitFor(
      () =>
        lines.some((l) => /waiting for Redis: the user in REDIS_URL may not run what agentq needs \(NOPERM/.test(l)),
      { what: 'the second reason' },
    );
    expect(done).toBe(false);
    const admin = new Redis({ port, host: '127.0.0.1', username: 'admin', password: 'adminpw' });
    await admin.call('ACL', 'SETUSER', 'app', '+ping');
    admin.disconnect();
    await waiting;
    expect(lines.filter((l) => /nothing listens there/.test(l))).toHaveLength(1);
    expect(lines.filter((l) => /NOPERM/.test(l))).toHaveLength(1);
    expect(lines.at(-1)).toBe('Redis answers now');
  });

  it('ends at once, saying nothing more, when its signal aborts', async () => {
    const { lines, logger } = capture();
    const stop = new AbortController();
    // Its next try would be a minute away: only the abort ends it within the test's time.
    const waiting = untilRedisAnswers(`redis://127.0.0.1:${await freePort()}`, logger, {
      signal: stop.signal,
      retryMs: 60_000,
      pingTimeoutMs: 60_000,
    });
    await waitFor(() => lines.length > 0, { what: 'a reason' });
    stop.abort();
    await waiting;
    expect(lines).toHaveLength(1);
  });
});

import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { workerErrorLog } from './worker-errors.js';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });

describe('workerErrorLog', () => {
  it('says an error once per interval, then how many times it came meanwhile; another error at once', () => {
    const lines: Array<{ msg: string; err: string; repeated?: number }> = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write: (c, _e, done) => {
          lines.push(JSON.parse(String(c)));
          done();
        },
      }),
    );
    let t = 0;
    const log = workerErrorLog(logger, 'agentStep', { everyMs: 30_000, now: () => t });
    for (; t < 29_000; t += 500) log(refused); // a reconnect every half second
    log(new Error('WRONGPASS invalid username-password pair or user is disabled.'));
    t = 30_000;
    log(refused);
    expect(lines.map((l) => [l.msg, l.err, l.repeated])).toEqual([
      ['agentStep worker error', 'nothing listens there (connect ECONNREFUSED 127.0.0.1:6379)', undefined],
      [
        'agentStep worker error',
        'Redis refused the user or password in REDIS_URL (WRONGPASS invalid username-password pair or user is disabled.)',
        undefined,
      ],
      ['agentStep worker error', 'nothing listens there (connect ECONNREFUSED 127.0.0.1:6379)', 57],
    ]);
  });
});

import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { newId } from './ids.js';
import { RunStore } from './run-store.js';
import type { RunSpec } from './schemas/run.js';

const redis = new Redis(inject('redisUrl'));
afterAll(() => redis.disconnect());

const spec: RunSpec = { model: 'm', max_depth: 3, on_budget_exhausted: 'final_answer', metadata: {}, ancestors: [], nesting: 0 };

describe('the run index', () => {
  it('sheds the ids of runs created more than twice the retention ago', async () => {
    const store = new RunStore({ redis, prefix: `rs${randomBytes(3).toString('hex')}`, retentionSeconds: 60 });
    const now = Date.now();
    const old = newId('run', now - 10 * 60_000);
    const recent = newId('run', now - 60_000);
    await store.createRun({ id: recent, owner: 'o', spec, messages: [], createdAt: new Date(now - 60_000) });
    await store.createRun({ id: old, owner: 'o', spec, messages: [], createdAt: new Date(now - 10 * 60_000) });
    expect(await redis.zrange(store.global.runIndex('o'), '0', '-1')).toEqual([old, recent]);
    const fresh = newId('run', now);
    await store.createRun({ id: fresh, owner: 'o', spec, messages: [] });
    // The 10-minute-old id is past 2 × 60 s; the 1-minute-old one is not.
    expect(await redis.zrange(store.global.runIndex('o'), '0', '-1')).toEqual([recent, fresh]);
  });
});

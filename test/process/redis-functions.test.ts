import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { newId, RunStore, type RunSpec } from '@agentq/shared';
import { monitorRedis } from '../fixtures/redis-monitor.js';
import { spawnRedisServer, type SpawnedRedis } from '../fixtures/redis.js';

// The tool-worker stores results by a Redis function once it is loaded over its connection (FCALL:
// the function's name, not the script's text), by the script itself before that. A Redis of this
// file's own: the tests flush its functions and change its users.

const spec: RunSpec = {
  model: 'm',
  max_depth: 3,
  on_budget_exhausted: 'final_answer',
  metadata: {},
  ancestors: [],
  nesting: 0,
};
const now = new Date().toISOString();
const result = (index: number) => ({
  id: `call_${index}`,
  name: 't',
  status: 'completed' as const,
  output: `out ${index}`,
  is_error: false,
  attempts: 1,
  duration_ms: 1,
  started_at: now,
  completed_at: now,
});
const event = (index: number) => ({
  depth: 0,
  index,
  tool_call_id: `call_${index}`,
  name: 't',
  is_error: false,
  duration_ms: 1,
  output: `out ${index}`,
});

let server: SpawnedRedis;
let admin: Redis;
beforeAll(async () => {
  server = await spawnRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

/** A store on its own connection (`url`), a run in it, and the commands that stored its results, in order. */
async function storeWith(url: string) {
  const conn = new Redis(url);
  const prefix = `fn${Math.random().toString(36).slice(2, 8)}`;
  const store = new RunStore({ redis: conn, prefix });
  const id = newId('run');
  await store.runs.create({ id, owner: 'o', spec, messages: [{ role: 'user', content: 'hi' }] });
  const hash = store.keys(id).toolCalls(0);
  const sent: string[] = [];
  const monitor = await monitorRedis(url, (c) => {
    if (c.source !== 'lua' && /^(eval|evalsha|fcall)$/i.test(c.args[0]!) && c.args.includes(hash))
      sent.push(c.args[0]!.toLowerCase());
  });
  const complete = (index: number) => store.toolCalls.complete(id, 0, index, result(index), event(index));
  const stored = async (index: number) => JSON.parse((await conn.hget(hash, String(index))) ?? 'null')?.output ?? null;
  /** The scripts and functions called so far, once MONITOR has caught up with the last one. */
  const commands = async (n: number) => {
    for (let i = 0; i < 100 && sent.length < n; i++) await new Promise((r) => setTimeout(r, 20));
    return sent.slice();
  };
  const close = () => {
    monitor.close();
    conn.disconnect();
  };
  return { conn, store, complete, stored, commands, close };
}

describe('tool results stored by a Redis function', () => {
  it(
    'are stored by the script until the function is loaded over the connection, ' +
      'by the function after, and by the script again after a reconnect',
    async () => {
      const s = await storeWith(server.url);
      try {
        await s.complete(0); // not loaded yet: the script, and loading starts
        await s.store.toolCalls.prepareCompletions();
        await s.complete(1);
        // Another socket may be another Redis (a failover, a restart): the script until loaded there.
        const ready = new Promise((r) => s.conn.once('ready', r));
        s.conn.disconnect(true);
        await ready;
        await s.complete(2);
        await s.store.toolCalls.prepareCompletions();
        await s.complete(3);
        expect(await s.commands(4)).toEqual(['eval', 'fcall', 'eval', 'fcall']);
        for (const i of [0, 1, 2, 3]) expect(await s.stored(i)).toBe(`out ${i}`);
        const [library] = (await admin.call('FUNCTION', 'LIST')) as unknown[][];
        expect(String(library[1])).toMatch(/^agentq_complete_tool_calls_[0-9a-f]{16}$/);
      } finally {
        s.close();
      }
    },
  );

  it(
    'after FUNCTION FLUSH: the result sent meanwhile is not stored (a write Redis refused), ' +
      'the next is, by the script, then by the function loaded again',
    async () => {
      const s = await storeWith(server.url);
      try {
        await s.store.toolCalls.prepareCompletions();
        await s.complete(0);
        await admin.call('FUNCTION', 'FLUSH');
        await expect(s.complete(1)).rejects.toThrow(/function not found/i);
        expect(await s.stored(1)).toBeNull();
        await s.complete(2);
        await s.store.toolCalls.prepareCompletions();
        await s.complete(3);
        expect(await s.commands(4)).toEqual(['fcall', 'fcall', 'eval', 'fcall']);
        expect(await Promise.all([0, 2, 3].map(s.stored))).toEqual(['out 0', 'out 2', 'out 3']);
      } finally {
        s.close();
      }
    },
  );

  it('by the script alone where Redis refuses to load functions (here an ACL)', async () => {
    await admin.call('ACL', 'SETUSER', 'nofunctions', 'on', '>pw', '~*', '&*', '+@all', '-function');
    const u = new URL(server.url);
    u.username = 'nofunctions';
    u.password = 'pw';
    const s = await storeWith(u.toString());
    try {
      await s.store.toolCalls.prepareCompletions();
      await s.complete(0);
      await s.store.toolCalls.prepareCompletions();
      await s.complete(1);
      expect(await s.commands(2)).toEqual(['eval', 'eval']);
      expect(await Promise.all([0, 1].map(s.stored))).toEqual(['out 0', 'out 1']);
    } finally {
      s.close();
    }
  });
});

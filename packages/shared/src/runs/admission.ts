import type { ClientContext, Result } from 'ioredis';
import type { RedisClient } from '../redis.js';
import { globalKeys } from '../store/keys.js';
import { limitsOf, type TenantTable } from '../tenants/limits.js';

/**
 * KEYS: backlog, limits, active total, vclock, pending, owners, the key's lane, the key's active set.
 * ARGV: op, owner, run id, now (ms), lane prefix, active prefix, most to admit.
 * op `arrive`: a queued root run joins its key's line (once; a run admitted before is returned
 * again, for its first step to be enqueued); `child`: a sub-run counts as active at once (its
 * parent holds a slot and waits for it: holding it back could deadlock the tree); `release`: a
 * run ended, its slot (or its place in line) is freed; `admit`: nothing but the admission.
 * Then, while there is room, it admits runs from the lines, fairly: the key with the smallest
 * virtual time goes first and moves on by 1/weight per run (start-time fair queueing), a key
 * at its max_active_runs waits until a run of it ends, and all keys together stop at the
 * total capacity if one is set. An admitted run is active and pending (its first step to be
 * enqueued by the caller; should the caller die, the pending sweep does it). Returns the
 * admitted run ids.
 */
const ADMISSION = `
local op, owner, runId, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lanePrefix, activePrefix = ARGV[5], ARGV[6]
local vclock = tonumber(redis.call('GET', KEYS[4]) or '0')
local out = {}
if op == 'child' then
  if redis.call('SADD', KEYS[8], runId) == 1 then redis.call('INCR', KEYS[3]) end
  redis.call('SADD', KEYS[6], owner)
  return out
end
if op == 'arrive' then
  redis.call('SADD', KEYS[6], owner)
  if redis.call('SISMEMBER', KEYS[8], runId) == 1 then
    out[1] = runId
  elseif redis.call('ZADD', KEYS[7], 'NX', now, runId) == 1 then
    redis.call('ZADD', KEYS[1], 'NX', vclock, owner)
  end
elseif op == 'release' then
  if redis.call('SREM', KEYS[8], runId) == 1 then redis.call('DECR', KEYS[3]) end
  redis.call('ZREM', KEYS[7], runId)
  if redis.call('ZCARD', KEYS[7]) > 0 then redis.call('ZADD', KEYS[1], 'NX', vclock, owner) end
end
local function limits(o)
  local raw = redis.call('HGET', KEYS[2], o) or redis.call('HGET', KEYS[2], '*')
  if raw then return cjson.decode(raw) end
  return { max_active_runs = 100, weight = 1 }
end
local capacity = tonumber(redis.call('HGET', KEYS[2], '#total') or '0')
for i = 1, tonumber(ARGV[7]) do
  if capacity > 0 and tonumber(redis.call('GET', KEYS[3]) or '0') >= capacity then break end
  local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if #head == 0 then break end
  local o, score = head[1], tonumber(head[2])
  local lim = limits(o)
  local active, lane = activePrefix .. o, lanePrefix .. o
  if redis.call('SCARD', active) >= lim.max_active_runs then
    redis.call('ZREM', KEYS[1], o)
  else
    local id = redis.call('ZPOPMIN', lane)[1]
    if not id then
      redis.call('ZREM', KEYS[1], o)
    else
      redis.call('SADD', active, id)
      redis.call('INCR', KEYS[3])
      redis.call('ZADD', KEYS[5], now, id)
      vclock = score
      if redis.call('ZCARD', lane) > 0 then redis.call('ZADD', KEYS[1], score + 1 / lim.weight, o) else redis.call('ZREM', KEYS[1], o) end
      out[#out + 1] = id
    end
  end
end
redis.call('SET', KEYS[4], vclock)
return out
`;

declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext = { type: 'default' }> {
    agentqAdmission(...keysAndArgs: Array<string | number>): Result<string[], Context>;
  }
}

// Runs admitted per call at most (a release frees one slot; a sweep may catch up on more).
const ADMIT_BATCH = 100;

/**
 * Admission of runs into the work queues, per key (owner): each key has its own line of root
 * runs, so a key that floods queues behind itself, never in front of another key; runs start
 * as the key's max_active_runs (and the total capacity, shared by weight) allow.
 */
export class Admission {
  private readonly g: ReturnType<typeof globalKeys>;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.g = globalKeys(prefix);
    redis.defineCommand('agentqAdmission', { lua: ADMISSION, numberOfKeys: 8 });
  }

  private run(op: 'arrive' | 'child' | 'release' | 'admit', owner: string, runId: string): Promise<string[]> {
    const g = this.g;
    return this.redis.agentqAdmission(
      g.backlog,
      g.limits,
      g.activeTotal,
      g.vclock,
      g.pendingRuns,
      g.owners,
      g.laneOf + owner,
      g.activeOf + owner,
      op,
      owner,
      runId,
      Date.now(),
      g.laneOf,
      g.activeOf,
      ADMIT_BATCH,
    );
  }

  /** A queued root run joins its key's line; returns the runs admitted now (to enqueue). */
  arrive(owner: string, runId: string): Promise<string[]> {
    return this.run('arrive', owner, runId);
  }

  /** A sub-run counts as active at once. */
  async child(owner: string, runId: string): Promise<void> {
    await this.run('child', owner, runId);
  }

  /** A run ended (or left its line); returns the runs admitted into the freed room. */
  release(owner: string, runId: string): Promise<string[]> {
    return this.run('release', owner, runId);
  }

  /** Admits what there is room for (after limits changed, or from a sweep). */
  admit(): Promise<string[]> {
    return this.run('admit', '', '');
  }

  /** Publishes every key's limits for the admission script (every API process, at start). */
  async publish(table: TenantTable): Promise<void> {
    const slim = (o: string) => {
      const l = limitsOf(table, o);
      return JSON.stringify({ max_active_runs: l.max_active_runs, weight: l.weight, max_runs_per_tree: l.max_runs_per_tree });
    };
    const tx = this.redis.multi().del(this.g.limits).hset(this.g.limits, '*', slim(''));
    for (const owner of table.byOwner.keys()) tx.hset(this.g.limits, owner, slim(owner));
    if (table.totalActiveRuns) tx.hset(this.g.limits, '#total', table.totalActiveRuns);
    await tx.exec();
  }

  /** The limits a worker needs of a key (as published): its tree size bound. */
  async treeLimit(owner: string): Promise<number> {
    const [own, dflt] = await this.redis.hmget(this.g.limits, owner, '*');
    const raw = own ?? dflt;
    return raw ? Number((JSON.parse(raw) as { max_runs_per_tree?: number }).max_runs_per_tree ?? 1000) : 1000;
  }

  /** A key's runs running and waiting in its line. */
  async standing(owner: string): Promise<{ active: number; queued: number }> {
    const [[, active], [, queued]] = ((await this.redis.pipeline().scard(this.g.activeOf + owner).zcard(this.g.laneOf + owner).exec()) ?? []) as Array<[unknown, number]>;
    return { active: Number(active ?? 0), queued: Number(queued ?? 0) };
  }

  /** Every key's active runs, to find those that ended without being released (their process died). */
  async activeByOwner(): Promise<Map<string, string[]>> {
    const owners = await this.redis.smembers(this.g.owners);
    const pipe = this.redis.pipeline();
    for (const o of owners) pipe.smembers(this.g.activeOf + o);
    const res = (await pipe.exec()) ?? [];
    return new Map(owners.map((o, i) => [o, (res[i]?.[1] as string[]) ?? []]));
  }
}

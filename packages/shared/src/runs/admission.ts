import type { ClientContext, Result } from 'ioredis';
import type { RedisClient } from '../redis.js';
import { globalKeys } from '../store/keys.js';
import { limitsOf, type TenantTable } from '../tenants/limits.js';

/**
 * KEYS: backlog, limits, active total, vclock, pending, owners, the key's lane, the key's active
 * set, the key's set of runs waiting for an answer.
 * ARGV: op, owner, run id, now (ms), lane prefix, active prefix, most to admit, the most runs
 * the key's line may hold.
 * op `arrive`: a queued root run joins its key's line (once; a run admitted before is returned
 * again, for its first step to be enqueued), unless the line is full (then `{'!full'}`); `child`: a sub-run counts as active at once (its
 * parent holds a slot and waits for it: holding it back could deadlock the tree); `release`: a
 * run ended, its slot (or its place in line) is freed; `suspend`: an active run waits for an
 * answer (it holds no slot while it waits); `resume`: it goes on, and takes a slot back at once
 * (an accepted run always runs; the key may be over its limit until one of its runs ends);
 * `admit`: nothing but the admission.
 * Then, while there is room, it admits runs from the lines, fairly: the key with the smallest
 * virtual time goes first and moves on by 1/weight per run (start-time fair queueing), a key
 * at its max_active_runs waits until a run of it ends, and all keys together stop at the
 * total capacity if one is set. An admitted run is active and pending (its first step to be
 * enqueued by the caller; should the caller die, the pending sweep does it). Returns the
 * admitted run ids. When no line holds a run, an arriving run with room is admitted without
 * joining its line first (the same outcome in fewer writes), and the virtual time is written
 * only when it moves.
 */
const ADMISSION = `
local op, owner, runId, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lanePrefix, activePrefix = ARGV[5], ARGV[6]
-- What the script reads only when it needs it: the virtual time, the total capacity.
local startClock, vclock, capacity
local function clock()
  if not startClock then
    startClock = tonumber(redis.call('GET', KEYS[4]) or '0')
    vclock = startClock
  end
  return vclock
end
local out = {}
-- A key's limits (its own, else the default) in one read, with the total capacity.
local function limits(o)
  local raw = redis.call('HMGET', KEYS[2], o, '*', '#total')
  capacity = capacity or tonumber(raw[3] or '0')
  local own = raw[1] or raw[2]
  if own then return cjson.decode(own) end
  return { max_active_runs = 100, weight = 1 }
end
local function underCapacity()
  capacity = capacity or tonumber(redis.call('HGET', KEYS[2], '#total') or '0')
  return capacity == 0 or tonumber(redis.call('GET', KEYS[3]) or '0') < capacity
end
local function admit(id, active)
  redis.call('SADD', active, id)
  redis.call('INCR', KEYS[3])
  redis.call('ZADD', KEYS[5], now, id)
  out[#out + 1] = id
end
if op == 'child' then
  if redis.call('SADD', KEYS[8], runId) == 1 then redis.call('INCR', KEYS[3]) end
  redis.call('SADD', KEYS[6], owner)
  return out
end
if op == 'resume' then
  if redis.call('SREM', KEYS[9], runId) == 1 and redis.call('SADD', KEYS[8], runId) == 1 then redis.call('INCR', KEYS[3]) end
  return out
end
if op == 'arrive' then
  redis.call('SADD', KEYS[6], owner)
  if redis.call('SISMEMBER', KEYS[8], runId) == 1 then
    out[1] = runId
  else
    local queued = redis.call('ZCARD', KEYS[7])
    if queued == 0 or not redis.call('ZSCORE', KEYS[7], runId) then
      if queued >= tonumber(ARGV[8]) then return { '!full' } end
      -- Nobody waits, in any line: the run is admitted now if there is room, exactly as joining
      -- its line and being taken from it below would (the virtual time does not move).
      if queued == 0 and redis.call('ZCARD', KEYS[1]) == 0 then
        local max = limits(owner).max_active_runs
        if underCapacity() and redis.call('SCARD', KEYS[8]) < max then
          admit(runId, KEYS[8])
          return out
        end
      end
      redis.call('ZADD', KEYS[7], now, runId)
      redis.call('ZADD', KEYS[1], 'NX', clock(), owner)
    end
  end
elseif op == 'release' or op == 'suspend' then
  if redis.call('SREM', KEYS[8], runId) == 1 then
    redis.call('DECR', KEYS[3])
    if op == 'suspend' then redis.call('SADD', KEYS[9], runId) end
  end
  if op == 'release' then
    redis.call('SREM', KEYS[9], runId)
    redis.call('ZREM', KEYS[7], runId)
  end
  if redis.call('ZCARD', KEYS[7]) > 0 then redis.call('ZADD', KEYS[1], 'NX', clock(), owner) end
end
for i = 1, tonumber(ARGV[7]) do
  if not underCapacity() then break end
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
      admit(id, active)
      clock()
      vclock = score
      if redis.call('ZCARD', lane) > 0 then redis.call('ZADD', KEYS[1], score + 1 / lim.weight, o) else redis.call('ZREM', KEYS[1], o) end
    end
  end
end
if startClock and vclock ~= startClock then redis.call('SET', KEYS[4], vclock) end
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
    redis.defineCommand('agentqAdmission', { lua: ADMISSION, numberOfKeys: 9 });
  }

  private run(
    op: 'arrive' | 'child' | 'release' | 'suspend' | 'resume' | 'admit',
    owner: string,
    runId: string,
    maxQueued = 0,
  ): Promise<string[]> {
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
      g.waitingOf + owner,
      op,
      owner,
      runId,
      Date.now(),
      g.laneOf,
      g.activeOf,
      ADMIT_BATCH,
      maxQueued,
    );
  }

  /**
   * A queued root run joins its key's line, if the line holds fewer than `maxQueued` runs;
   * returns the runs admitted now (to enqueue), or `full`.
   */
  async arrive(
    owner: string,
    runId: string,
    maxQueued = Number.MAX_SAFE_INTEGER,
  ): Promise<{ full: boolean; admitted: string[] }> {
    const out = await this.run('arrive', owner, runId, maxQueued);
    return out[0] === '!full' ? { full: true, admitted: [] } : { full: false, admitted: out };
  }

  /** A sub-run counts as active at once. */
  async child(owner: string, runId: string): Promise<void> {
    await this.run('child', owner, runId);
  }

  /** A run ended (or left its line); returns the runs admitted into the freed room. */
  release(owner: string, runId: string): Promise<string[]> {
    return this.run('release', owner, runId);
  }

  /**
   * Runs that now wait for an answer give their slots up (nothing of them runs while they wait);
   * returns the runs admitted into the room.
   */
  async suspend(owner: string, runIds: string[]): Promise<string[]> {
    const admitted: string[] = [];
    for (const id of runIds) admitted.push(...(await this.run('suspend', owner, id)));
    return admitted;
  }

  /**
   * Runs that waited go on: each takes its slot back at once, whatever the key's limit (a run
   * that was accepted always runs; the key admits no new run until it is under its limit again).
   * A resume that overtakes its suspend (an answer within milliseconds) leaves the run counted
   * as waiting while it runs: the key may run one more run than its limit until the reconciling
   * sweep (Runs.reconcileAdmission) counts it again.
   */
  async resume(owner: string, runIds: string[]): Promise<void> {
    for (const id of runIds) await this.run('resume', owner, id);
  }

  /** Admits what there is room for (after limits changed, or from a sweep). */
  admit(): Promise<string[]> {
    return this.run('admit', '', '');
  }

  /** Publishes every key's limits for the admission script (every API process, at start). */
  async publish(table: TenantTable): Promise<void> {
    const slim = (o: string) => {
      const l = limitsOf(table, o);
      return JSON.stringify({
        max_active_runs: l.max_active_runs,
        weight: l.weight,
        max_runs_per_tree: l.max_runs_per_tree,
      });
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

  /** A key's runs running, waiting in its line, and waiting for an answer. */
  async standing(owner: string): Promise<{ active: number; queued: number; waiting: number }> {
    const res = ((await this.redis
      .pipeline()
      .scard(this.g.activeOf + owner)
      .zcard(this.g.laneOf + owner)
      .scard(this.g.waitingOf + owner)
      .exec()) ?? []) as Array<[unknown, number]>;
    const [active, queued, waiting] = res.map(([, n]) => Number(n ?? 0));
    return { active, queued, waiting };
  }

  /**
   * Every key's active runs and runs waiting for an answer, to find those whose process died
   * before releasing, suspending or resuming them.
   */
  async activeByOwner(): Promise<Map<string, { active: string[]; waiting: string[] }>> {
    const owners = await this.redis.smembers(this.g.owners);
    const pipe = this.redis.pipeline();
    for (const o of owners) pipe.smembers(this.g.activeOf + o).smembers(this.g.waitingOf + o);
    const res = (await pipe.exec()) ?? [];
    return new Map(
      owners.map((o, i) => [
        o,
        { active: (res[2 * i]?.[1] as string[]) ?? [], waiting: (res[2 * i + 1]?.[1] as string[]) ?? [] },
      ]),
    );
  }
}

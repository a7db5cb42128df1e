import type { ClientContext, Result } from 'ioredis';
import { parseActionId, type ActionDecision, type ActionRecord } from '../actions/action-record.js';
import type { RedisClient } from '../redis.js';
import { globalKeys, runKeys, RUN_FIELDS as F } from './keys.js';
import { EVENTS_MAXLEN, lua, RUN_OVER_LUA, XADD_EVENT_LUA } from './lua.js';
import { eventJson } from './run-events.js';

/** The suffix of a request's decision field in its run's actions hash. */
const DECISION = ':d';
/** The field of a request's decision in its run's actions hash. */
export const decisionField = (id: string) => id + DECISION;

/**
 * `unpend(id, runKey, pendingKey)`: the request no longer waits in this run's view; a run left
 * with nothing waiting goes from `requires_action` back to `running` (then it returns true).
 */
const UNPEND_LUA = `
local function unpend(id, runKey, pendingKey)
  redis.call('ZREM', pendingKey, id)
  if redis.call('ZCARD', pendingKey) == 0 and redis.call('HGET', runKey, ${lua(F.status)}) == 'requires_action' then
    redis.call('HSET', runKey, ${lua(F.status)}, 'running')
    return true
  end
  return false
end
`;

// The scripts below take the same keys: KEYS[1] the waiting run, [2] its actions hash, [3] its
// pending set, [4] its events, [5] its root's events, then each ancestor's run and pending set.

/**
 * ARGV: maxlen, `action.required` event data, number of ancestors, root is the run ('1'/'0'),
 * then per request: id, JSON, creation time (ms). Stores each request not stored before (a
 * redelivered step asks nothing twice), lists it as waiting on the run and every ancestor, moves
 * those that are running to `requires_action` and appends `action.required` to the run's and the
 * root's streams. Returns {how many requests are new (-1 if the run has ended), then the runs
 * it moved to requires_action: 0 the run, i its i-th ancestor}.
 */
const REQUIRE = `${RUN_OVER_LUA}${XADD_EVENT_LUA}
if runOver(redis.call('HGET', KEYS[1], ${lua(F.status)})) then return { -1 } end
local n = tonumber(ARGV[3])
local made = 0
for i = 5, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) == 1 then
    made = made + 1
    redis.call('ZADD', KEYS[3], ARGV[i + 2], ARGV[i])
    for a = 0, n - 1 do redis.call('ZADD', KEYS[7 + 2 * a], ARGV[i + 2], ARGV[i]) end
  end
end
if made == 0 then return { 0 } end
local runs = { KEYS[1] }
for a = 0, n - 1 do runs[#runs + 1] = KEYS[6 + 2 * a] end
local out = { made }
for i, key in ipairs(runs) do
  if redis.call('HGET', key, ${lua(F.status)}) == 'running' then
    redis.call('HSET', key, ${lua(F.status)}, 'requires_action')
    out[#out + 1] = i - 1
  end
end
xadd(KEYS[4], ARGV[1], 'action.required', ARGV[2])
if ARGV[4] == '0' then xadd(KEYS[5], ARGV[1], 'action.required', ARGV[2]) end
return out
`;

/**
 * ARGV: maxlen, id, decision JSON, `action.resolved` event data, number of ancestors, root is the
 * run. Stores the request's decision unless it has one: the first of answer, expiry and cancel
 * wins, whichever process makes it. Returns {'ok', the runs it moved back to running (0 the run, i
 * its i-th ancestor)…}, {'missing'}, {'ended'} (the run is over) or {'resolved', the decision
 * stored before}.
 */
const RESOLVE = `${RUN_OVER_LUA}${XADD_EVENT_LUA}${UNPEND_LUA}
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then return { 'missing' } end
local prev = redis.call('HGET', KEYS[2], ARGV[2] .. ${lua(DECISION)})
if prev then return { 'resolved', prev } end
if runOver(redis.call('HGET', KEYS[1], ${lua(F.status)})) then return { 'ended' } end
redis.call('HSET', KEYS[2], ARGV[2] .. ${lua(DECISION)}, ARGV[3])
local out = { 'ok' }
if unpend(ARGV[2], KEYS[1], KEYS[3]) then out[#out + 1] = '0' end
for a = 0, tonumber(ARGV[5]) - 1 do
  if unpend(ARGV[2], KEYS[6 + 2 * a], KEYS[7 + 2 * a]) then out[#out + 1] = tostring(a + 1) end
end
xadd(KEYS[4], ARGV[1], 'action.resolved', ARGV[4])
if ARGV[6] == '0' then xadd(KEYS[5], ARGV[1], 'action.resolved', ARGV[4]) end
return out
`;

/**
 * ARGV: maxlen, decision JSON, its time, number of ancestors, root is the run, run id. For a run that
 * has ended: every request of its own still waiting is decided `cancelled` (an answer that won
 * the race stands) and no longer waits on its ancestors. Returns {the ids cancelled, the
 * ancestors it moved back to running (i: the i-th)}.
 */
const CANCEL_PENDING = `${XADD_EVENT_LUA}${UNPEND_LUA}
local n = tonumber(ARGV[4])
local cancelled, resumed = {}, {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  if redis.call('HEXISTS', KEYS[2], id) == 1 and redis.call('HSETNX', KEYS[2], id .. ${lua(DECISION)}, ARGV[2]) == 1 then
    cancelled[#cancelled + 1] = id
    redis.call('ZREM', KEYS[3], id)
    for a = 0, n - 1 do
      if unpend(id, KEYS[6 + 2 * a], KEYS[7 + 2 * a]) then resumed[#resumed + 1] = tostring(a + 1) end
    end
    if ARGV[5] == '0' then
      xadd(KEYS[5], ARGV[1], 'action.resolved', cjson.encode({ run_id = ARGV[6], id = id, decision = 'cancelled', at = ARGV[3] }))
    end
  end
end
return { cancelled, resumed }
`;

declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext = { type: 'default' }> {
    agentqRequireActions(numKeys: number, ...keysAndArgs: Array<string | number>): Result<number[], Context>;
    agentqResolveAction(numKeys: number, ...keysAndArgs: Array<string | number>): Result<string[], Context>;
    agentqCancelActions(numKeys: number, ...keysAndArgs: Array<string | number>): Result<[string[], string[]], Context>;
  }
}

/** A run and its place in its tree: what the scripts need to reach its ancestors. */
export interface ActionRun {
  id: string;
  owner: string;
  /** Run ids from the root down to the parent (empty for a root run). */
  ancestors: string[];
}

/** How answering a request went. */
export type ResolveResult =
  /** Decided now; `resumed`: the runs (of the run and its ancestors) that wait for nothing any more. */
  | { kind: 'ok'; resumed: string[] }
  | { kind: 'missing' }
  /** The run has ended: nothing waits any more. */
  | { kind: 'ended' }
  /** Someone decided first; their decision stands. */
  | { kind: 'resolved'; decision: ActionDecision };

/** A request with its decision (none while it waits). */
export interface StoredAction {
  record: ActionRecord;
  decision: ActionDecision | null;
}

// The inbox is scanned this many ids at a time.
const INBOX_SCAN = 50;

/**
 * Requests for an answer: made by a step's fan-out, decided once (answer, expiry or cancel,
 * whichever comes first), listed on the waiting run, its ancestors and its key's inbox.
 * A request lives in its run's keys (its tree's slot) and expires with its run.
 */
export class ActionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly retentionSeconds: number,
  ) {
    redis.defineCommand('agentqRequireActions', { lua: REQUIRE });
    redis.defineCommand('agentqResolveAction', { lua: RESOLVE });
    redis.defineCommand('agentqCancelActions', { lua: CANCEL_PENDING });
  }

  private treeKeys(run: ActionRun): string[] {
    const k = runKeys(this.prefix, run.id);
    const root = run.ancestors[0] ?? run.id;
    return [
      k.run,
      k.actions,
      k.pendingActions,
      k.events,
      runKeys(this.prefix, root).events,
      ...run.ancestors.flatMap((a) => [runKeys(this.prefix, a).run, runKeys(this.prefix, a).pendingActions]),
    ];
  }

  /** The run (index 0) or its ancestor (index i: the i-th) a script names by its place. */
  private static runAt(run: ActionRun, index: number | string): string {
    const i = Number(index);
    return i === 0 ? run.id : run.ancestors[i - 1];
  }

  /**
   * Stores a round's requests (those not stored before), lists them in the key's inbox and on
   * the run and its ancestors, whose status becomes `requires_action`; returns how many are new
   * (-1: the run has ended) and the runs that began to wait. The inbox is written first: an
   * entry whose request never got written is shed when the inbox is read.
   */
  async require(run: ActionRun, records: ActionRecord[]): Promise<{ made: number; waiting: string[] }> {
    if (!records.length) return { made: 0, waiting: [] };
    const g = globalKeys(this.prefix);
    const scores = records.map((r) => Date.parse(r.created_at));
    const pipe = this.redis.pipeline();
    for (const key of [g.actionInbox(run.owner), g.actionInboxPending(run.owner)]) {
      pipe.zadd(key, ...records.flatMap((r, i) => [scores[i], r.id]));
    }
    pipe.zremrangebyscore(g.actionInbox(run.owner), '-inf', Date.now() - 2 * this.retentionSeconds * 1000);
    await execOrThrow(pipe);
    const keys = this.treeKeys(run);
    const items = records.map((r) => ({
      id: r.id,
      type: r.type,
      run_id: r.run_id,
      tool_call_id: r.tool_call_id,
      name: r.name,
      arguments: r.arguments,
      ...(r.type === 'input' ? { question: r.question, choices: r.choices ?? null } : {}),
      created_at: r.created_at,
      expires_at: r.expires_at,
    }));
    const [made, ...flipped] = await this.redis.agentqRequireActions(
      keys.length,
      ...keys,
      EVENTS_MAXLEN,
      eventJson('action.required', run.id, { items }),
      run.ancestors.length,
      run.ancestors.length ? '0' : '1',
      ...records.flatMap((r, i) => [r.id, JSON.stringify(r), scores[i]]),
    );
    return { made, waiting: flipped.map((i) => ActionStore.runAt(run, i)) };
  }

  /**
   * Decides a request once: the first decision (answer, expiry, cancel) stored wins, and the
   * request stops waiting on the run and its ancestors (a run with nothing left waiting is
   * `running` again), with `action.resolved` on the run's and the root's streams.
   */
  async resolve(run: ActionRun, id: string, decision: ActionDecision): Promise<ResolveResult> {
    const keys = this.treeKeys(run);
    const r = await this.redis.agentqResolveAction(
      keys.length,
      ...keys,
      EVENTS_MAXLEN,
      id,
      JSON.stringify(decision),
      eventJson('action.resolved', run.id, { id, decision: decision.decision }, decision.at),
      run.ancestors.length,
      run.ancestors.length ? '0' : '1',
    );
    if (r[0] === 'ok') {
      await this.redis.zrem(globalKeys(this.prefix).actionInboxPending(run.owner), id);
      return { kind: 'ok', resumed: r.slice(1).map((i) => ActionStore.runAt(run, i)) };
    }
    if (r[0] === 'resolved') return { kind: 'resolved', decision: JSON.parse(r[1]) };
    return { kind: r[0] as 'missing' | 'ended' };
  }

  /**
   * For a run that has ended: its requests still waiting are cancelled; returns their ids and
   * the ancestors that wait for nothing any more.
   */
  async cancelPending(run: ActionRun): Promise<{ cancelled: string[]; resumed: string[] }> {
    const keys = this.treeKeys(run);
    const at = new Date().toISOString();
    const decision: ActionDecision = { decision: 'cancelled', by: 'agentq', at };
    const [ids, resumed] = await this.redis.agentqCancelActions(
      keys.length,
      ...keys,
      EVENTS_MAXLEN,
      JSON.stringify(decision),
      at,
      run.ancestors.length,
      run.ancestors.length ? '0' : '1',
      run.id,
    );
    if (ids.length) await this.redis.zrem(globalKeys(this.prefix).actionInboxPending(run.owner), ...ids);
    return { cancelled: ids, resumed: resumed.map((i) => ActionStore.runAt(run, i)) };
  }

  /** Marks a request answered, until its job is woken (see RunActions.decide). */
  async markAnswered(id: string): Promise<void> {
    await this.redis.zadd(globalKeys(this.prefix).answeredActions, Date.now(), id);
  }

  async unmarkAnswered(id: string): Promise<void> {
    await this.redis.zrem(globalKeys(this.prefix).answeredActions, id);
  }

  /** Requests marked answered before `before` (ms since epoch) and not unmarked since, oldest first. */
  async answeredBefore(before: number, limit = 500): Promise<string[]> {
    return this.redis.zrangebyscore(globalKeys(this.prefix).answeredActions, '-inf', `(${before}`, 'LIMIT', 0, limit);
  }

  /** A request and its decision, or null if there is no such request (or its run expired). */
  async get(id: string): Promise<StoredAction | null> {
    const at = parseActionId(id);
    if (!at) return null;
    const [record, decision] = await this.redis.hmget(runKeys(this.prefix, at.runId).actions, id, decisionField(id));
    return record ? { record: JSON.parse(record), decision: decision ? JSON.parse(decision) : null } : null;
  }

  /** The decision on a request, or null while it waits. */
  async decision(runId: string, id: string): Promise<ActionDecision | null> {
    const d = await this.redis.hget(runKeys(this.prefix, runId).actions, decisionField(id));
    return d ? JSON.parse(d) : null;
  }

  /** Which of these requests of a run are decided (one round trip). */
  async decided(runId: string, ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const found = await this.redis.hmget(runKeys(this.prefix, runId).actions, ...ids.map(decisionField));
    return ids.filter((_, i) => found[i] !== null);
  }

  /**
   * The requests that wait on a run: its own and its sub-runs', oldest first. Two round trips;
   * every run of a tree shares its slot, so the second is one pipeline on a Cluster too.
   */
  async pending(runId: string): Promise<ActionRecord[]> {
    const ids = await this.redis.zrange(runKeys(this.prefix, runId).pendingActions, '0', '-1');
    if (!ids.length) return [];
    const pipe = this.redis.pipeline();
    for (const id of ids)
      pipe.hmget(runKeys(this.prefix, parseActionId(id)?.runId ?? runId).actions, id, decisionField(id));
    const rows = (await pipe.exec()) ?? [];
    const out: ActionRecord[] = [];
    for (const [err, row] of rows) {
      const [record, decision] = (err ? [] : row) as Array<string | null>;
      if (record && !decision) out.push(JSON.parse(record));
    }
    return out;
  }

  /**
   * A key's requests, newest first (`status`: only those that wait, or only those decided),
   * `limit` per page after the request `after`; returns the page and the `next` cursor. Entries
   * whose request is gone (its run expired) are dropped from the inbox as they are met.
   */
  async inbox(
    owner: string,
    opts: { status?: 'pending' | 'resolved'; limit: number; after?: string },
  ): Promise<{ data: StoredAction[]; next: string | null }> {
    const g = globalKeys(this.prefix);
    const key = opts.status === 'pending' ? g.actionInboxPending(owner) : g.actionInbox(owner);
    let start = 0;
    if (opts.after) {
      const rank = await this.redis.zrevrank(key, opts.after);
      if (rank !== null) start = rank + 1;
      else {
        // The cursor left this view (decided since): continue from its time.
        const score = await this.redis.zscore(g.actionInbox(owner), opts.after);
        start = score === null ? 0 : await this.redis.zcount(key, `(${score}`, '+inf');
      }
    }
    const data: StoredAction[] = [];
    for (let scanned = 0; data.length < opts.limit && scanned < 20_000; ) {
      const ids = await this.redis.zrevrange(key, String(start), String(start + INBOX_SCAN - 1));
      if (!ids.length) return { data, next: null };
      scanned += ids.length;
      // Each request lives in its run's slot (a Cluster may hold them on different nodes): read apart.
      const rows = await Promise.all(ids.map((id) => this.get(id)));
      const gone: string[] = [];
      for (let i = 0; i < ids.length; i++) {
        start++;
        const a = rows[i];
        if (!a) gone.push(ids[i]);
        else if (opts.status === 'pending' && a.decision) gone.push(ids[i]);
        else if (!opts.status || (opts.status === 'pending') === !a.decision) {
          data.push(a);
          if (data.length === opts.limit) break;
        }
      }
      if (gone.length) await this.redis.zrem(key, ...gone);
      if (data.length === opts.limit) {
        const more = await this.redis.zrevrange(key, String(start - gone.length), String(start - gone.length));
        return { data, next: more.length ? data[data.length - 1].record.id : null };
      }
      start -= gone.length;
      if (ids.length < INBOX_SCAN) return { data, next: null };
    }
    return { data, next: data.length ? data[data.length - 1].record.id : null };
  }
}

async function execOrThrow(pipe: ReturnType<RedisClient['pipeline']>): Promise<void> {
  for (const [err] of (await pipe.exec()) ?? []) if (err) throw err;
}

import { parseActionId, type ActionDecision, type ActionRecord } from '../actions/action-record.js';
import type { RedisClient } from '../infra/redis.js';
import { ACTION_FIELDS, globalKeys, runKeys } from './keys.js';
import { redisScript } from './redis-script.js';
import { eventJson } from './run-events.js';

/** The field of a request's decision in its run's actions hash. */
export const decisionField = ACTION_FIELDS.decision;

/** The keys every request script takes: the waiting run's, its root's events, its ancestors'. */
interface RequestKeys {
  runKey: string;
  actionsKey: string;
  pendingKey: string;
  eventsKey: string;
  rootEventsKey: string;
  /** Root first: each ancestor's run key and pending key. */
  ancestors: Array<{ runKey: string; pendingKey: string }>;
}
const requestKeys = (k: RequestKeys) => [
  k.runKey,
  k.actionsKey,
  k.pendingKey,
  k.eventsKey,
  k.rootEventsKey,
  ...k.ancestors.flatMap((a) => [a.runKey, a.pendingKey]),
];
const isRootFlag = (ancestorCount: number) => (ancestorCount ? '0' : '1');

/** Stores a round's requests (see require-actions.lua). */
const requireActions = redisScript({
  file: 'require-actions',
  keys: requestKeys,
  args: (a: {
    requiredEvent: string;
    ancestorCount: number;
    requests: Array<{ id: string; record: string; createdMs: number }>;
  }) => [
    a.requiredEvent,
    a.ancestorCount,
    isRootFlag(a.ancestorCount),
    ...a.requests.flatMap((r) => [r.id, r.record, r.createdMs]),
  ],
  reply: (r) => r as number[],
});

/** Decides a request once (see resolve-action.lua). */
const resolveAction = redisScript({
  file: 'resolve-action',
  keys: requestKeys,
  args: (a: { actionId: string; decision: string; resolvedEvent: string; ancestorCount: number }) => [
    a.actionId,
    a.decision,
    a.resolvedEvent,
    a.ancestorCount,
    isRootFlag(a.ancestorCount),
  ],
  reply: (r) => r as string[],
});

/** Cancels an ended run's waiting requests (see cancel-actions.lua). */
const cancelActions = redisScript({
  file: 'cancel-actions',
  keys: requestKeys,
  args: (a: { decision: string; at: string; ancestorCount: number; runId: string }) => [
    a.decision,
    a.at,
    a.ancestorCount,
    isRootFlag(a.ancestorCount),
    a.runId,
  ],
  reply: (r) => r as [string[], string[]],
});

/** A run and its place in its tree: what the scripts need to reach its ancestors. */
export interface ActionRun {
  id: string;
  tenant: string;
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
 * whichever comes first), listed on the waiting run, its ancestors and its tenant's inbox.
 * A request lives in its run's keys (its tree's slot) and expires with its run.
 */
export class ActionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly retentionSeconds: number,
  ) {}

  private treeKeys(run: ActionRun): RequestKeys {
    const k = runKeys(this.prefix, run.id);
    const root = run.ancestors[0] ?? run.id;
    return {
      runKey: k.run,
      actionsKey: k.actions,
      pendingKey: k.pendingActions,
      eventsKey: k.events,
      rootEventsKey: runKeys(this.prefix, root).events,
      ancestors: run.ancestors.map((a) => ({
        runKey: runKeys(this.prefix, a).run,
        pendingKey: runKeys(this.prefix, a).pendingActions,
      })),
    };
  }

  /** The run (index 0) or its ancestor (index i: the i-th) a script names by its place. */
  private static runAt(run: ActionRun, index: number | string): string {
    const i = Number(index);
    return i === 0 ? run.id : run.ancestors[i - 1];
  }

  /**
   * Stores a round's requests (those not stored before), lists them in the tenant's inbox and on
   * the run and its ancestors, whose status becomes `requires_action`; returns how many are new
   * (-1: the run has ended) and the runs that began to wait. The inbox is written first: an
   * entry whose request never got written is shed when the inbox is read.
   */
  async require(run: ActionRun, records: ActionRecord[]): Promise<{ made: number; waiting: string[] }> {
    if (!records.length) return { made: 0, waiting: [] };
    const g = globalKeys(this.prefix);
    const scores = records.map((r) => Date.parse(r.created_at));
    const pipe = this.redis.pipeline();
    for (const key of [g.actionInbox(run.tenant), g.actionInboxPending(run.tenant)]) {
      pipe.zadd(key, ...records.flatMap((r, i) => [scores[i], r.id]));
    }
    pipe.zremrangebyscore(g.actionInbox(run.tenant), '-inf', Date.now() - 2 * this.retentionSeconds * 1000);
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
    const [made, ...flipped] = await requireActions(this.redis, keys, {
      requiredEvent: eventJson('action.required', run.id, { items }),
      ancestorCount: run.ancestors.length,
      requests: records.map((r, i) => ({ id: r.id, record: JSON.stringify(r), createdMs: scores[i] })),
    });
    return { made, waiting: flipped.map((i) => ActionStore.runAt(run, i)) };
  }

  /**
   * Decides a request once: the first decision (answer, expiry, cancel) stored wins, and the
   * request stops waiting on the run and its ancestors (a run with nothing left waiting is
   * `running` again), with `action.resolved` on the run's and the root's streams.
   */
  async resolve(run: ActionRun, id: string, decision: ActionDecision): Promise<ResolveResult> {
    const keys = this.treeKeys(run);
    const r = await resolveAction(this.redis, keys, {
      actionId: id,
      decision: JSON.stringify(decision),
      resolvedEvent: eventJson('action.resolved', run.id, { id, decision: decision.decision }, decision.at),
      ancestorCount: run.ancestors.length,
    });
    if (r[0] === 'ok') {
      await this.redis.zrem(globalKeys(this.prefix).actionInboxPending(run.tenant), id);
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
    const [ids, resumed] = await cancelActions(this.redis, keys, {
      decision: JSON.stringify(decision),
      at,
      ancestorCount: run.ancestors.length,
      runId: run.id,
    });
    if (ids.length) await this.redis.zrem(globalKeys(this.prefix).actionInboxPending(run.tenant), ...ids);
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
    tenant: string,
    opts: { status?: 'pending' | 'resolved'; limit: number; after?: string },
  ): Promise<{ data: StoredAction[]; next: string | null }> {
    const g = globalKeys(this.prefix);
    const key = opts.status === 'pending' ? g.actionInboxPending(tenant) : g.actionInbox(tenant);
    let start = 0;
    if (opts.after) {
      const rank = await this.redis.zrevrank(key, opts.after);
      if (rank !== null) start = rank + 1;
      else {
        // The cursor left this view (decided since): continue from its time.
        const score = await this.redis.zscore(g.actionInbox(tenant), opts.after);
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

import { isCluster, type RedisClient } from '../infra/redis.js';
import type { AssistantMessage, ChatMessage } from '../core/schemas/message.js';
import { isTerminal, type RunObject, type RunSpec, type RunStatus, type StopReason } from '../core/schemas/run.js';
import { globalKeys, runKeys, RUN_FIELDS as F } from './keys.js';
import { redisScript } from './redis-script.js';
import { listRuns, type ListedBatch } from './run-list.js';

export type { ListedBatch };
import { eventJson } from './run-events.js';
import { isRunHash, runObjectFrom, runStateFrom, type RunHash, type RunState } from './run-hash.js';

/** Runs a transaction and throws the first error of its commands. */
async function execOrThrow(tx: ReturnType<RedisClient['multi']>): Promise<void> {
  const res = (await tx.exec()) ?? [];
  for (const [err] of res) if (err) throw err;
}

/** A run to store: its fixed spec and first messages. */
export interface NewRun {
  id: string;
  tenant: string;
  spec: RunSpec;
  messages: ChatMessage[];
  parentRunId?: string | null;
  rootRunId?: string;
  createdAt?: Date;
}

/** A run this process ended: as the API shows it, its spec and its tenant. */
export interface EndedRun {
  run: RunObject;
  spec: RunSpec;
  tenant: string;
  /** It ended while something of it waited for an answer (status `requires_action`). */
  wasWaiting: boolean;
}

/** How a run ends. */
export interface FinishInput {
  status: Exclude<RunStatus, 'queued' | 'running' | 'requires_action'>;
  stopReason: StopReason;
  output?: AssistantMessage | null;
  outputParsed?: unknown;
  error?: { code: string; message: string } | null;
}

/** A new run's hash fields and first messages, as the creating scripts take them. */
interface NewRunArgs {
  queuedEvent: string;
  fields: string[];
  messages: string[];
}
const newRunArgs = (a: NewRunArgs) => [a.queuedEvent, a.fields.length, ...a.fields, ...a.messages];
const createdOrNot = (r: unknown) => r === 1;

/** A new run on one Redis, in one script (see create-run.lua). */
const createRun = redisScript({
  file: 'create-run',
  keys: (k: { pendingKey: string; indexKey: string; runKey: string; messagesKey: string; eventsKey: string }) => [
    k.pendingKey,
    k.indexKey,
    k.runKey,
    k.messagesKey,
    k.eventsKey,
  ],
  args: (a: NewRunArgs & { runId: string; createdMs: number; trimBelow: string }) => [
    a.runId,
    a.createdMs,
    a.trimBelow,
    ...newRunArgs(a),
  ],
  reply: createdOrNot,
});

/** A new run's own keys on a Cluster (see create-run-record.lua). */
const createRunRecord = redisScript({
  file: 'create-run-record',
  keys: (k: { runKey: string; messagesKey: string; eventsKey: string }) => [k.runKey, k.messagesKey, k.eventsKey],
  args: newRunArgs,
  reply: createdOrNot,
});

/** queued → running, with `run.started` (see start-run.lua). */
const startRun = redisScript({
  file: 'start-run',
  keys: (k: { runKey: string; eventsKey: string }) => [k.runKey, k.eventsKey],
  args: (a: { startedAt: string; startedEvent: string }) => [a.startedAt, a.startedEvent],
  reply: (r) => typeof r === 'string',
});

/** Reserves a call's sub-runs in its tree, once (see reserve-subruns.lua). */
const reserveSubruns = redisScript({
  file: 'reserve-subruns',
  keys: (k: { rootRunKey: string }) => [k.rootRunKey],
  args: (a: { callField: string; count: number; limit: number }) => [a.callField, a.count, a.limit],
  reply: (r) => r as [number, number],
});

/** Ends a run once (see finish-run.lua); the status it ended from, or null if it had ended. */
const finishRun = redisScript({
  file: 'finish-run',
  keys: (k: { runKey: string; eventsKey: string; otherKeys: string[] }) => [k.runKey, k.eventsKey, ...k.otherKeys],
  args: (a: {
    retentionSeconds: number;
    eventType: string;
    status: string;
    stopReason: string;
    completedAt: string;
    output: string;
    outputParsed: string;
    error: string;
    eventData: string;
  }) => [
    a.retentionSeconds,
    a.eventType,
    a.status,
    a.stopReason,
    a.completedAt,
    a.output,
    a.outputParsed,
    a.error,
    a.eventData,
  ],
  reply: (r) => (typeof r === 'string' ? (r as RunStatus) : null),
});

/** Run records: create, read, list, start and end a run, in its hash and the tenant's index. */
export class RunRecords {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    readonly retentionSeconds: number,
  ) {}

  private keys(runId: string) {
    return runKeys(this.prefix, runId);
  }

  private index(tenant: string) {
    return globalKeys(this.prefix).runIndex(tenant);
  }

  /**
   * Stores a new run (record, first messages, `run.queued` event), pending until its first step
   * is enqueued (settle), and lists it in its tenant's index; returns it as the API shows it.
   * On one Redis all of it is one script. On a Cluster the run's keys (its tree's slot),
   * the pending set (admission's slot) and the index (the tenant's) cannot share one: the
   * pending mark and the index entry are written first, so that a process dying in between
   * leaves a mark the sweep settles (no run: nothing to do) and an index entry the listing
   * drops (an id with no run is shed), never a run nobody knows of.
   */
  async create(run: NewRun): Promise<RunObject> {
    return (await this.createSized(run)).run;
  }

  /**
   * create, and the transcript's stored size (bytes), which the run's first step is told.
   * `created` is false when a run with this id existed already (a sub-run another delivery of its
   * job wrote): it is left as it is, and `run` and `transcriptBytes` describe what was not written.
   */
  async createSized(run: NewRun): Promise<{ run: RunObject; transcriptBytes: number; created: boolean }> {
    const k = this.keys(run.id);
    const createdAt = (run.createdAt ?? new Date()).toISOString();
    const fields: RunHash = {
      [F.spec]: JSON.stringify(run.spec),
      [F.status]: 'queued',
      [F.depth]: '0',
      [F.tenant]: run.tenant,
      [F.createdAt]: createdAt,
      [F.rootRunId]: run.rootRunId ?? run.id,
    };
    if (run.parentRunId) fields[F.parentRunId] = run.parentRunId;
    const messages = run.messages.map((m) => JSON.stringify(m));
    const transcriptBytes = messages.reduce((n, m) => n + Buffer.byteLength(m), 0);
    fields[F.transcriptBytes] = String(transcriptBytes);
    const index = this.index(run.tenant);
    // Ids start with their creation time, so the index sheds the ids of long-expired runs by
    // range as it grows (twice the retention: a run outliving it is merely no longer listed).
    const createdMs = Date.parse(createdAt);
    const cutoff = createdMs - 2 * this.retentionSeconds * 1000;
    const trimBelow = cutoff > 0 ? `(run_${cutoff.toString(36).padStart(9, '0')}` : '';
    const pendingSet = globalKeys(this.prefix).pendingRuns;
    const queued = eventJson('run.queued', run.id, {}, createdAt);
    const newRun = { queuedEvent: queued, fields: Object.entries(fields).flat(), messages };
    const own = { runKey: k.run, messagesKey: k.messages, eventsKey: k.events };
    let created: boolean;
    if (isCluster(this.redis)) {
      // The pending mark first (see above). For a sub-run another delivery wrote, marking it again
      // is harmless: createChild settles it, and the sweep leaves a run that is not queued alone.
      await this.redis.zadd(pendingSet, createdMs, run.id);
      const listed = this.redis.multi().zadd(index, 0, run.id);
      if (trimBelow) listed.zremrangebylex(index, '-', trimBelow);
      [, created] = await Promise.all([execOrThrow(listed), createRunRecord(this.redis, own, newRun)]);
    } else {
      created = await createRun(
        this.redis,
        { pendingKey: pendingSet, indexKey: index, ...own },
        { runId: run.id, createdMs, trimBelow, ...newRun },
      );
    }
    return { run: runObjectFrom(run.id, fields), transcriptBytes, created };
  }

  /** Removes a run that could not be enqueued, so that a client never sees a run nobody runs. */
  async delete(runId: string, tenant: string): Promise<void> {
    const k = this.keys(runId);
    await this.redis.del(k.run, k.messages, k.steps, k.events, k.context, k.actions, k.pendingActions);
    await this.redis.zrem(this.index(tenant), runId);
    await this.settle(runId);
  }

  /** The run's first step is enqueued: it is no longer pending. */
  async settle(runId: string): Promise<void> {
    await this.redis.zrem(globalKeys(this.prefix).pendingRuns, runId);
  }

  /** Runs still pending that were created before `before` (ms since epoch), oldest first. */
  async pending(before: number, limit = 500): Promise<string[]> {
    return this.redis.zrangebyscore(globalKeys(this.prefix).pendingRuns, '-inf', `(${before}`, 'LIMIT', 0, limit);
  }

  /** Each run's status, null for a gone run (the commands sent back to back: one round trip). */
  async statuses(runIds: string[]): Promise<Array<RunStatus | null>> {
    return (await Promise.all(
      runIds.map((id) => this.redis.hget(this.keys(id).run, F.status)),
    )) as Array<RunStatus | null>;
  }

  async getState(runId: string): Promise<RunState | null> {
    const h = await this.redis.hgetall(this.keys(runId).run);
    return isRunHash(h) ? runStateFrom(runId, h) : null;
  }

  /** The run object of the API, or null if there is no such run (or it expired). */
  async get(runId: string): Promise<RunObject | null> {
    const h = await this.redis.hgetall(this.keys(runId).run);
    return isRunHash(h) ? runObjectFrom(runId, h) : null;
  }

  /** The run object if it exists and belongs to `tenant` (one read), else null. */
  async getOwn(runId: string, tenant: string): Promise<RunObject | null> {
    const h = await this.redis.hgetall(this.keys(runId).run);
    return isRunHash(h) && h[F.tenant] === tenant ? runObjectFrom(runId, h) : null;
  }

  /**
   * What a sub-run needs of its tree before a step, in one round trip: the tokens the whole tree
   * has used (the root's usage_total) and whether any ancestor is gone or over (then so is this
   * run: a cancel marks only the run it names, and its descendants stop on seeing it).
   */
  async ancestry(ancestors: string[]): Promise<{ treeTokens: number; ancestorOver: boolean }> {
    if (!ancestors.length) return { treeTokens: 0, ancestorOver: false };
    // Sent back to back (one round trip), as commands rather than a pipeline: see Transcript.headReads.
    const [tokens, ...statuses] = await Promise.all([
      this.redis.hget(this.keys(ancestors[0]).run, `${F.usageTotalPrefix}total_tokens`),
      ...ancestors.map((a) => this.redis.hget(this.keys(a).run, F.status)),
    ]);
    return {
      treeTokens: Number(tokens ?? 0),
      ancestorOver: statuses.some((st) => st === null || isTerminal(st as RunStatus)),
    };
  }

  /**
   * Runs of one tenant, newest first, in small batches sized before they are read (see
   * listRuns); returns the `next` cursor.
   */
  list(
    tenant: string,
    opts: { limit: number; after?: string; status?: RunStatus },
  ): AsyncGenerator<ListedBatch, string | null> {
    return listRuns(this.redis, { index: this.index(tenant), runKey: (id) => this.keys(id).run }, opts);
  }

  /**
   * Reserves room for a call's `count` sub-runs in the tree of `rootId`, once per call (`callRef`
   * names it): the tree's size with them, and whether they fit in `limit` (see reserve-subruns.lua).
   */
  async reserveSubruns(
    rootId: string,
    callRef: string,
    count: number,
    limit: number,
  ): Promise<{ reserved: boolean; size: number }> {
    const [reserved, size] = await reserveSubruns(
      this.redis,
      { rootRunKey: this.keys(rootId).run },
      { callField: `${F.subrunReservationPrefix}${callRef}`, count, limit },
    );
    return { reserved: reserved === 1, size };
  }

  /** Lists a sub-run under its parent; true if it was not listed yet. */
  async addChild(parentId: string, childId: string): Promise<boolean> {
    return (await this.redis.zadd(this.keys(parentId).children, 'NX', Date.now(), childId)) === 1;
  }

  /** The sub-runs a run started, oldest first. */
  async children(runId: string): Promise<RunObject[]> {
    const ids = await this.redis.zrange(this.keys(runId).children, '0', '-1');
    const runs = await Promise.all(ids.map((id) => this.get(id)));
    return runs.filter((r): r is RunObject => r !== null);
  }

  /** Every descendant of a run (children, their children, …), a level per round trip. */
  async descendants(runId: string): Promise<string[]> {
    const all: string[] = [];
    for (let level = [runId]; level.length; ) {
      const pipe = this.redis.pipeline();
      for (const id of level) pipe.zrange(this.keys(id).children, '0', '-1');
      const res = (await pipe.exec()) ?? [];
      level = res.flatMap(([err, ids]) => (err ? [] : (ids as string[])));
      all.push(...level);
    }
    return all;
  }

  /** Moves a queued run to running; true (and a `run.started` event) the first time only. */
  async start(runId: string): Promise<boolean> {
    const k = this.keys(runId);
    const now = new Date().toISOString();
    return startRun(
      this.redis,
      { runKey: k.run, eventsKey: k.events },
      { startedAt: now, startedEvent: eventJson('run.started', runId, {}, now) },
    );
  }

  /** Ends a run once: status, output, terminal event, expiry of all its keys. */
  async finish(runId: string, input: FinishInput): Promise<EndedRun | null> {
    return this.finishWith(runId, await this.redis.hgetall(this.keys(runId).run), input);
  }

  /** Ends many runs the same way, two round trips in all; returns those this call ended. */
  async finishMany(runIds: string[], input: FinishInput): Promise<EndedRun[]> {
    const pipe = this.redis.pipeline();
    for (const id of runIds) pipe.hgetall(this.keys(id).run);
    const hashes = ((await pipe.exec()) ?? []).map(([err, h]) => (err ? {} : (h as RunHash)));
    const ended = await Promise.all(runIds.map((id, i) => this.finishWith(id, hashes[i], input)));
    return ended.filter((e): e is EndedRun => e !== null);
  }

  private async finishWith(runId: string, h: RunHash, input: FinishInput): Promise<EndedRun | null> {
    const k = this.keys(runId);
    if (!isRunHash(h) || isTerminal(h[F.status] as RunStatus)) return null;
    const completedAt = new Date().toISOString();
    const depth = Number(h[F.depth] ?? 0);
    const fields = {
      [F.status]: input.status,
      [F.stopReason]: input.stopReason,
      [F.completedAt]: completedAt,
      [F.output]: input.output ? JSON.stringify(input.output) : '',
      [F.outputParsed]: input.outputParsed === undefined ? '' : JSON.stringify(input.outputParsed),
      [F.error]: input.error ? JSON.stringify(input.error) : '',
    };
    const run = runObjectFrom(runId, { ...h, ...fields, [F.startedAt]: h[F.startedAt] || completedAt });
    const toolCallKeys = Array.from({ length: depth + 1 }, (_, d) => k.toolCalls(d));
    const others = [
      k.messages,
      k.steps,
      k.children,
      k.context,
      k.webhookDeliveries,
      k.actions,
      k.pendingActions,
      ...toolCallKeys,
    ];
    const type = `run.${input.status}` as const;
    const done = await finishRun(
      this.redis,
      { runKey: k.run, eventsKey: k.events, otherKeys: others },
      {
        retentionSeconds: this.retentionSeconds,
        eventType: type,
        status: input.status,
        stopReason: input.stopReason,
        completedAt,
        output: fields[F.output],
        outputParsed: fields[F.outputParsed],
        error: fields[F.error],
        eventData: eventJson(type, runId, { run }, completedAt),
      },
    );
    if (!done) return null;
    // Whether it waited is the status the script replaced: a request stored since the hash was
    // read made it `requires_action`, and that request is then cancelled with the run.
    return { run, spec: JSON.parse(h[F.spec]) as RunSpec, tenant: h[F.tenant], wasWaiting: done === 'requires_action' };
  }
}

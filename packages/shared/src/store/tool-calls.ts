import type { RedisClient } from '../infra/redis.js';
import type { ToolOutcomeKind } from '../core/tool-outcome.js';
import { runKeys, RUN_FIELDS as F, TOOL_CALL_FIELDS as T } from './keys.js';
import { redisScript } from './redis-script.js';
import { eventJson, type RunEventData } from './run-events.js';
import { heldSpecFrom, runStateFrom, type HeldSpec, type RunHash, type RunState } from './run-hash.js';
import { toolMessage } from './transcript.js';

/** The outcome of one tool call as stored under its call (never executed again). */
export interface ToolResultRecord {
  id: string;
  name: string;
  status: 'completed' | 'failed';
  /** How the call ended (see ToolOutcome). */
  outcome: ToolOutcomeKind;
  /** The text the model sees. */
  output: string;
  is_error: boolean;
  attempts: number;
  duration_ms: number;
  started_at: string;
  completed_at: string;
  subrun_ids?: string[];
}

/** A tool call in flight, for `/steps` while it runs. */
export interface ToolCallRunning {
  attempts: number;
  started_at: string;
}

/**
 * The run fields a tool call needs (HMGET, not HGETALL: the run hash grows with each step), but
 * its spec, which never changes once the run is created: a worker that holds it does not read it.
 * The status first: the begin script reads it there.
 */
const TOOL_CALL_RUN_FIELDS = [F.status, F.depth, F.tenant, F.parentRunId, F.rootRunId, F.createdAt];

/** A run's spec as a worker holds it, with the creation time of the run it was read from. */
export interface HeldRunSpec {
  /** A run deleted and created again under its id is another run, with a spec of its own. */
  createdAt: string;
  spec: HeldSpec;
}

/** Begins calls of one step (see begin-tool-calls.lua). */
const beginToolCalls = redisScript({
  file: 'begin-tool-calls',
  keys: (k: { toolCallsKey: string; runKey: string; eventsKey: string; ancestorRunKeys: string[] }) => [
    k.toolCallsKey,
    k.runKey,
    k.eventsKey,
    ...k.ancestorRunKeys,
  ],
  args: (a: { calls: Array<{ index: number; marker: string; startedEvent: string }>; runFields: string[] }) => [
    a.calls.length,
    ...a.calls.flatMap((c) => [T.result(c.index), c.marker, c.startedEvent]),
    ...a.runFields,
  ],
  reply: (r) => r as Array<string | null | Array<string | null>>,
});

/** Stores results of one step's calls, completing its round when they are the last (see complete-tool-calls.lua). */
const completeToolCalls = redisScript({
  file: 'complete-tool-calls',
  keys: (k: {
    toolCallsKey: string;
    eventsKey: string;
    runKey: string;
    messagesKey: string;
    ancestorRunKeys: string[];
  }) => [k.toolCallsKey, k.eventsKey, k.runKey, k.messagesKey, ...k.ancestorRunKeys],
  args: (a: {
    depth: number;
    roundSize: number;
    calls: Array<{ index: number; result: string; completedEvent: string; message: string }>;
  }) => [
    a.calls.length,
    a.depth,
    a.roundSize,
    ...a.calls.flatMap((c) => [T.result(c.index), c.result, c.completedEvent, c.message]),
  ],
  reply: (r) => {
    const out = r as Array<string | number>;
    return { stored: out.slice(0, -1) as string[], roundComplete: out[out.length - 1] === 1 };
  },
});

/** How a tool call can begin: done before, nothing to do, or begun (with an earlier attempt's marker). */
export type ToolCallStart =
  | { kind: 'done'; result: ToolResultRecord }
  /** The run is gone or over, or (`ancestorOver`) an ancestor is: the call does not run. */
  | { kind: 'ended'; run: RunState | null; ancestorOver?: boolean }
  /** `spec`: the run's, as read or as the caller held it (what a caller may hold for the run's next calls). */
  | { kind: 'begun'; run: RunState; spec: HeldSpec; interrupted: ToolCallRunning | null };

/** A call waiting to be begun with the other calls of its step begun in the same tick. */
interface BeginRequest {
  index: number;
  attempts: number;
  event?: RunEventData<'tool.started'>;
  resolve: (start: ToolCallStart) => void;
  reject: (err: unknown) => void;
}

/** What storing a call's result came to. */
export interface CompletedCall {
  /** The result stored under the call: this one, or one stored before (which stands). */
  stored: ToolResultRecord;
  /** This result is the one stored (none was before). */
  storedNow: boolean;
  /** This result (or one stored with it) was the round's last: its `tool` messages are appended now. */
  roundComplete: boolean;
}

/** A call's result waiting to be stored with the other results of its step completed in the same tick. */
interface CompleteRequest {
  index: number;
  rec: ToolResultRecord;
  event: RunEventData<'tool.completed'>;
  resolve: (done: CompletedCall) => void;
  reject: (err: unknown) => void;
}

/** The results of one step completed in the same tick. */
interface CompleteGroup {
  runId: string;
  depth: number;
  /** How many calls the step made. */
  count: number;
  ancestors: string[];
  calls: CompleteRequest[];
}

/** The calls of one step (and one line of ancestors) begun in the same tick. */
interface BeginGroup {
  runId: string;
  depth: number;
  ancestors: string[];
  /** The run's spec, if a call's caller held it: the script then does not read it. */
  held?: HeldRunSpec;
  calls: BeginRequest[];
}

/** Tool calls of a run's steps: begun once per attempt, a result stored once per call. */
export class ToolCalls {
  private readonly beginning = new Map<string, BeginGroup>();
  private readonly completing = new Map<string, CompleteGroup>();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private keys(runId: string) {
    return runKeys(this.prefix, runId);
  }

  /**
   * Begins a tool call in one round trip: `done` with the result if the call finished before;
   * `ended` if the run or one of its `ancestors` is gone or over; else the attempt is marked
   * running, `tool.started` appended (unless `event` is omitted, for a resumed job), and
   * `interrupted` holds the marker of an earlier attempt that never finished (its worker died).
   * With `held` (the run's spec as the caller holds it), the spec is not read, unless the run
   * turns out to have been created again under its id since.
   *
   * Calls of one step begun together (a round's calls, started at once) share the round trip:
   * begins are gathered until the promise callbacks queued now have run, then sent as one
   * script that begins each as if alone.
   */
  async begin(
    runId: string,
    depth: number,
    index: number,
    attempts: number,
    opts: { ancestors?: string[]; event?: RunEventData<'tool.started'>; held?: HeldRunSpec } = {},
  ): Promise<ToolCallStart> {
    const ancestors = opts.ancestors ?? [];
    const key = [this.keys(runId).toolCalls(depth), ...ancestors].join('\n');
    return new Promise((resolve, reject) => {
      let group = this.beginning.get(key);
      if (!group) {
        const started = { runId, depth, ancestors, calls: [] };
        this.beginning.set(key, started);
        group = started;
        queueMicrotask(() =>
          process.nextTick(() => {
            this.beginning.delete(key);
            void this.beginTogether(started);
          }),
        );
      }
      group.held ??= opts.held;
      group.calls.push({ index, attempts, event: opts.event, resolve, reject });
    });
  }

  private async beginTogether({ runId, depth, ancestors, held, calls }: BeginGroup): Promise<void> {
    try {
      const k = this.keys(runId);
      const startedAt = new Date().toISOString();
      const fields = held ? TOOL_CALL_RUN_FIELDS : [...TOOL_CALL_RUN_FIELDS, F.spec];
      const r = await beginToolCalls(
        this.redis,
        {
          toolCallsKey: k.toolCalls(depth),
          runKey: k.run,
          eventsKey: k.events,
          ancestorRunKeys: ancestors.map((a) => this.keys(a).run),
        },
        {
          calls: calls.map((c) => ({
            index: c.index,
            marker: JSON.stringify({ attempts: c.attempts, started_at: startedAt } satisfies ToolCallRunning),
            startedEvent: c.event ? eventJson('tool.started', runId, c.event) : '',
          })),
          runFields: fields,
        },
      );
      const state = r[0];
      const h: RunHash = {};
      fields.forEach((f, i) => {
        const v = r[1 + i];
        if (typeof v === 'string') h[f] = v;
      });
      // One state for every call of the group: they do not change it.
      const spec = await this.specOf(runId, h, held);
      const run = spec ? runStateFrom(runId, h, spec.value) : null;
      calls.forEach((c, i) => {
        // Each call's reply on its own: one that cannot be read fails that call alone.
        try {
          const [outcome, value] = r[1 + fields.length + i] as Array<string | null>;
          if (outcome === 'done') c.resolve({ kind: 'done', result: JSON.parse(value!) });
          else if (outcome === 'begun' && state === 'begun' && run && spec)
            c.resolve({ kind: 'begun', run, spec, interrupted: value ? JSON.parse(value) : null });
          else c.resolve({ kind: 'ended', run, ...(state === 'ancestor_over' ? { ancestorOver: true } : {}) });
        } catch (err) {
          c.reject(err);
        }
      });
    } catch (err) {
      // The script failed, or the run it read cannot be: every call of the group fails.
      for (const c of calls) c.reject(err);
    }
  }

  /**
   * The spec of the run whose fields `h` holds: as read with them, or as held if the run is the
   * one it was held for, or read now (a run created again under its id since). Undefined for a
   * gone run.
   */
  private async specOf(runId: string, h: RunHash, held: HeldRunSpec | undefined): Promise<HeldSpec | undefined> {
    // Every stored run has a status and a spec; a gone run reads as nothing.
    if (h[F.status] === undefined) return undefined;
    if (held && h[F.createdAt] === held.createdAt) return held.spec;
    const json = held ? await this.redis.hget(this.keys(runId).run, F.spec) : h[F.spec];
    return json ? heldSpecFrom(json) : undefined;
  }

  /** Forgets an attempt that never reached the tool, so the next one is not taken for a rerun. */
  async clearRunning(runId: string, depth: number, index: number): Promise<void> {
    await this.redis.hdel(this.keys(runId).toolCalls(depth), T.running(index));
  }

  /**
   * Stores a tool result unless one is stored already and, if this one is, appends
   * `tool.completed` with `event`. The call that stores the round's last result (the step made
   * `count` calls) also appends the round's `tool` messages in call order, and learns so
   * (`roundComplete`): its caller then enqueues the next step. `ancestors`: the run's, root first
   * (their usage_total counts the round's calls).
   *
   * Results of one step completed in the same tick (a round's calls whose answers arrived
   * together) are stored by one script, each as if alone.
   */
  complete(
    runId: string,
    depth: number,
    index: number,
    rec: ToolResultRecord,
    event: RunEventData<'tool.completed'>,
    round: { count: number; ancestors: string[] },
  ): Promise<CompletedCall> {
    const key = [this.keys(runId).toolCalls(depth), round.count, ...round.ancestors].join('\n');
    return new Promise((resolve, reject) => {
      let group = this.completing.get(key);
      if (!group) {
        const started: CompleteGroup = { runId, depth, count: round.count, ancestors: round.ancestors, calls: [] };
        this.completing.set(key, started);
        group = started;
        queueMicrotask(() =>
          process.nextTick(() => {
            this.completing.delete(key);
            void this.completeTogether(started);
          }),
        );
      }
      group.calls.push({ index, rec, event, resolve, reject });
    });
  }

  private async completeTogether({ runId, depth, count, ancestors, calls }: CompleteGroup): Promise<void> {
    try {
      const k = this.keys(runId);
      const sent = calls.map((c) => JSON.stringify(c.rec));
      const { stored, roundComplete } = await completeToolCalls(
        this.redis,
        {
          toolCallsKey: k.toolCalls(depth),
          eventsKey: k.events,
          runKey: k.run,
          messagesKey: k.messages,
          ancestorRunKeys: ancestors.map((a) => this.keys(a).run),
        },
        {
          depth,
          roundSize: count,
          calls: calls.map((c, i) => ({
            index: c.index,
            result: sent[i]!,
            completedEvent: eventJson('tool.completed', runId, c.event),
            message: JSON.stringify(toolMessage(c.rec.id, c.rec.output)),
          })),
        },
      );
      calls.forEach((c, i) => {
        try {
          c.resolve({
            stored: JSON.parse(stored[i]!) as ToolResultRecord,
            storedNow: stored[i] === sent[i],
            roundComplete,
          });
        } catch (err) {
          c.reject(err);
        }
      });
    } catch (err) {
      for (const c of calls) c.reject(err);
    }
  }
}

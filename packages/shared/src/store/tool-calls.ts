import type { ClientContext, Result } from 'ioredis';
import type { RedisClient } from '../redis.js';
import type { ToolOutcomeKind } from '../tool-outcome.js';
import { runKeys, RUN_FIELDS as F, TOOL_CALL_FIELDS as T } from './keys.js';
import { APPEND_ROUND_LUA, lua, RUN_OVER_LUA, XADD_EVENT_LUA } from './lua.js';
import { RedisFunction } from './redis-function.js';
import { eventJson, type RunEventData } from './run-events.js';
import { heldSpecFrom, runStateFrom, type HeldSpec, type RunHash, type RunState } from './run-hash.js';
import { toolMessage } from './transcript.js';

/** The outcome of one tool call as stored under its call (never executed again). */
export interface ToolResultRecord {
  id: string;
  name: string;
  status: 'completed' | 'failed';
  /** How the call ended (see ToolOutcome); absent on results stored by versions before it. */
  outcome?: ToolOutcomeKind;
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
const TOOL_CALL_RUN_FIELDS = [F.status, F.depth, F.owner, F.parentRunId, F.rootRunId, F.createdAt];

/** A run's spec as a worker holds it, with the creation time of the run it was read from. */
export interface HeldRunSpec {
  /** A run deleted and created again under its id is another run, with a spec of its own. */
  createdAt: string;
  spec: HeldSpec;
}

/**
 * KEYS: the step's tool-call hash, run, events, then the run keys of the run's ancestors.
 * ARGV: the number of calls n, then for each call its index, its running marker JSON and its
 * `tool.started` event data JSON ('' for none; appended untrimmed: the step's commit trims the
 * stream), then the run fields to read, its status first.
 * Begins calls of one step in one round trip, each exactly as if begun alone, one after
 * another: the run and its ancestors are read once. Returns {state, run fields…, then one
 * {outcome, value} per call}. The state is 'ended' if the run is gone or over, 'ancestor_over'
 * if an ancestor is (a cancel of the tree), else 'begun'. A call whose result is stored is
 * {'done', stored result} whatever the state; otherwise, when the state is 'begun', the call is
 * marked running, `tool.started` appended, and it is {'begun', the marker of an earlier attempt};
 * else it is {state} and nothing is written.
 */
const BEGIN_TOOL_CALLS = `${RUN_OVER_LUA}${XADD_EVENT_LUA}
local n = tonumber(ARGV[1])
local fields = {}
for i = 2 + 3 * n, #ARGV do fields[#fields + 1] = ARGV[i] end
local run = redis.call('HMGET', KEYS[2], unpack(fields))
local state = 'begun'
if runOver(run[1]) then
  state = 'ended'
else
  for k = 4, #KEYS do
    if runOver(redis.call('HGET', KEYS[k], ${lua(F.status)})) then
      state = 'ancestor_over'
      break
    end
  end
end
local out = { state }
for i = 1, #run do out[#out + 1] = run[i] end
-- Every call's result and running marker in one read, every marker written in one HSET: a
-- command inside a script costs Redis more than a field read or written with others does.
local callFields = {}
for c = 0, n - 1 do
  local index = ARGV[2 + 3 * c]
  callFields[2 * c + 1] = index
  callFields[2 * c + 2] = index .. ${lua(T.runningSuffix)}
end
local calls = redis.call('HMGET', KEYS[1], unpack(callFields))
local markers, begunNow = {}, {}
for c = 0, n - 1 do
  local index, marker, event = ARGV[2 + 3 * c], ARGV[3 + 3 * c], ARGV[4 + 3 * c]
  local stored = calls[2 * c + 1]
  if stored then
    out[#out + 1] = { 'done', stored }
  elseif state ~= 'begun' then
    out[#out + 1] = { state }
  else
    -- A call begun twice in one batch sees its first begin's marker, as one after another would.
    out[#out + 1] = { 'begun', begunNow[index] or calls[2 * c + 2] }
    begunNow[index] = marker
    markers[#markers + 1] = callFields[2 * c + 2]
    markers[#markers + 1] = marker
    if event ~= '' then appendEvent(KEYS[3], 'tool.started', event) end
  end
end
if #markers > 0 then redis.call('HSET', KEYS[1], unpack(markers)) end
return out
`;

/**
 * KEYS: the step's tool-call hash, events, then (when the round's size is known) run, messages
 * and the ancestors' run hashes. ARGV: the number of calls n, depth, the number of calls in the
 * round, then for each call its index, result JSON, event data JSON (appended untrimmed: the next
 * step's commit trims the stream) and `tool` message JSON ('' without the round's size).
 * Stores each call's result unless one is stored, and only then appends its `tool.completed`,
 * one call after another as if each came alone. When one of them stored its message now and
 * every call of the round has one, the round's `tool` messages are appended in call order,
 * exactly as the transcript's appendRound would (same marker, same counters), so the next step
 * finds its transcript complete and writes nothing before its model call. If a call of the round
 * has no result (its job failed for good) or its result came without a message (stored by a
 * worker of an earlier version), nothing is appended here and the next step appends the
 * messages itself. A message waits in the hash (`i:msg`) only while its round is incomplete:
 * the calls stored by the call that completes the round (all of them, when a round's results
 * come together) are appended from the arguments and never written there. Returns each call's
 * stored result (this one, or the earlier one).
 */
const COMPLETE_TOOL_CALLS = `${APPEND_ROUND_LUA}${XADD_EVENT_LUA}
local n = tonumber(ARGV[1])
local out = {}
local storedNow = {}
local storedMessage = false
-- Every call's stored result in one read, the new ones written in one HSET (as in the begin).
local indexes = {}
for c = 0, n - 1 do indexes[c + 1] = ARGV[4 + 4 * c] end
local stored = redis.call('HMGET', KEYS[1], unpack(indexes))
local writes, storedHere = {}, {}
for c = 0, n - 1 do
  local index, result, event, message = ARGV[4 + 4 * c], ARGV[5 + 4 * c], ARGV[6 + 4 * c], ARGV[7 + 4 * c]
  -- A call stored twice in one batch keeps its first result, as one after another would.
  local earlier = stored[c + 1] or storedHere[index]
  if earlier then
    out[#out + 1] = earlier
  else
    storedHere[index] = result
    writes[#writes + 1] = index
    writes[#writes + 1] = result
    appendEvent(KEYS[2], 'tool.completed', event)
    if #KEYS >= 4 then
      storedNow[index] = message
      storedMessage = true
    end
    out[#out + 1] = result
  end
end
if #writes > 0 then redis.call('HSET', KEYS[1], unpack(writes)) end
if not storedMessage then return out end
-- The round's messages: those stored now from ARGV, the others from the calls stored before.
local msgs, earlier = {}, {}
for i = 0, tonumber(ARGV[3]) - 1 do
  local index = tostring(i)
  if storedNow[index] then msgs[i + 1] = storedNow[index] else earlier[#earlier + 1] = index end
end
local earlierFields = {}
for j, index in ipairs(earlier) do earlierFields[j] = index .. ${lua(T.messageSuffix)} end
local complete = true
if #earlier > 0 then
  local got = redis.call('HMGET', KEYS[1], unpack(earlierFields))
  for j, index in ipairs(earlier) do
    if got[j] then msgs[tonumber(index) + 1] = got[j] else complete = false end
  end
end
if not complete then
  -- A call of the round has no result yet: keep this one's message for the call that completes it.
  for index, message in pairs(storedNow) do redis.call('HSET', KEYS[1], index .. ${lua(T.messageSuffix)}, message) end
  return out
end
local ancestors = {}
for k = 5, #KEYS do ancestors[#ancestors + 1] = KEYS[k] end
if appendRound(KEYS[3], KEYS[4], ancestors, ARGV[2], msgs) == 1 and #earlier > 0 then redis.call('HDEL', KEYS[1], unpack(earlierFields)) end
return out
`;

declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext = { type: 'default' }> {
    agentqBeginToolCalls(
      numKeys: number,
      ...keysAndArgs: Array<string | number>
    ): Result<Array<string | null | Array<string | null>>, Context>;
  }
}

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

/** A call's result waiting to be stored with the other results of its step completed in the same tick. */
interface CompleteRequest {
  index: number;
  rec: ToolResultRecord;
  event: RunEventData<'tool.completed'>;
  resolve: (stored: ToolResultRecord) => void;
  reject: (err: unknown) => void;
}

/** The results of one step completed in the same tick, with the round's size and run when known. */
interface CompleteGroup {
  runId: string;
  depth: number;
  round?: { run: RunState; count: number };
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
  private completionsDue = false;
  /** COMPLETE_TOOL_CALLS as a function: what complete() sends once it is loaded. */
  private readonly completeFunction: RedisFunction;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    redis.defineCommand('agentqBeginToolCalls', { lua: BEGIN_TOOL_CALLS });
    this.completeFunction = new RedisFunction(redis, 'agentq_complete_tool_calls', COMPLETE_TOOL_CALLS);
  }

  /**
   * Loads what complete() sends as a Redis function, so that the first results are stored by it
   * too (it is also loaded on first use, and after a reconnect). Never rejects: without it
   * (before Redis 7, or an ACL that refuses FUNCTION), complete() sends the script.
   */
  prepareCompletions(): Promise<void> {
    return this.completeFunction.load();
  }

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
      const r = await this.redis.agentqBeginToolCalls(
        3 + ancestors.length,
        k.toolCalls(depth),
        k.run,
        k.events,
        ...ancestors.map((a) => this.keys(a).run),
        calls.length,
        ...calls.flatMap((c) => [
          T.result(c.index),
          JSON.stringify({ attempts: c.attempts, started_at: startedAt } satisfies ToolCallRunning),
          c.event ? eventJson('tool.started', runId, c.event) : '',
        ]),
        ...fields,
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
   * `tool.completed` with `event`. With `round` (the run and the number of calls in the step),
   * the call that stores the round's last result also appends the round's `tool` messages in
   * call order (see COMPLETE_TOOL_CALLS). Returns the result that is stored.
   *
   * Results of one step completed in the same tick (a round's calls whose answers arrived
   * together) are stored by one script, each as if alone: the results are held until the promise
   * callbacks queued now have run, or until flushCompletions(), whichever comes first.
   *
   * Ordered once sent: the script is sent as FCALL of its function once that is loaded over the
   * connection, else as EVAL (never EVALSHA, whose NOSCRIPT fallback would resend it after later
   * commands; see RedisFunction), so whatever this connection sends after it is sent runs after
   * it in Redis, or, should Redis have lost the function (FUNCTION FLUSH), the results are not
   * stored (a write Redis refused). Held, it is not: commands sent before the flush, from promise
   * callbacks of the same turn, may run before it. So a caller that sends something that needs the result
   * without waiting for this promise calls flushCompletions() first. The tool-worker does: it
   * flushes when a job's handler ends, then completes the job (and adds the next step) on the
   * same connection without waiting for the reply, and the next step still finds every result
   * (test/result-order.test.ts).
   */
  complete(
    runId: string,
    depth: number,
    index: number,
    rec: ToolResultRecord,
    event: RunEventData<'tool.completed'>,
    round?: { run: RunState; count: number },
  ): Promise<ToolResultRecord> {
    const key = [
      this.keys(runId).toolCalls(depth),
      round ? `${round.count}` : '',
      ...(round?.run.spec.ancestors ?? []),
    ].join('\n');
    return new Promise((resolve, reject) => {
      let group = this.completing.get(key);
      if (!group) {
        group = { runId, depth, round, calls: [] };
        this.completing.set(key, group);
      }
      group.calls.push({ index, rec, event, resolve, reject });
      if (!this.completionsDue) {
        this.completionsDue = true;
        queueMicrotask(() => process.nextTick(() => this.flushCompletions()));
      }
    });
  }

  /** Sends the results held by complete() now, one script per step, in the order they came. */
  flushCompletions(): void {
    this.completionsDue = false;
    const groups = [...this.completing.values()];
    this.completing.clear();
    for (const g of groups) void this.completeTogether(g);
  }

  private async completeTogether({ runId, depth, round, calls }: CompleteGroup): Promise<void> {
    try {
      const k = this.keys(runId);
      const keys = round
        ? [k.toolCalls(depth), k.events, k.run, k.messages, ...round.run.spec.ancestors.map((a) => this.keys(a).run)]
        : [k.toolCalls(depth), k.events];
      const args: [number, ...Array<string | number>] = [
        keys.length,
        ...keys,
        calls.length,
        depth,
        round?.count ?? 0,
        ...calls.flatMap((c) => [
          T.result(c.index),
          JSON.stringify(c.rec),
          eventJson('tool.completed', runId, c.event),
          round ? JSON.stringify(toolMessage(c.rec.id, c.rec.output)) : '',
        ]),
      ];
      const fn = this.completeFunction;
      const sent = fn.usable() ? this.redis.fcall(fn.name, ...args) : this.redis.eval(fn.body, ...args);
      const stored = (await sent.catch((err: unknown) => {
        fn.failed(err);
        throw err;
      })) as string[];
      calls.forEach((c, i) => {
        try {
          c.resolve(JSON.parse(stored[i]!) as ToolResultRecord);
        } catch (err) {
          c.reject(err);
        }
      });
    } catch (err) {
      for (const c of calls) c.reject(err);
    }
  }
}

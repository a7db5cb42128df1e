import type { ClientContext, Result } from 'ioredis';
import type { RedisClient } from '../redis.js';
import type { ToolOutcomeKind } from '../tool-outcome.js';
import { runKeys, RUN_FIELDS as F, TOOL_CALL_FIELDS as T } from './keys.js';
import { APPEND_ROUND_LUA, EVENTS_MAXLEN, lua, RUN_OVER_LUA, XADD_EVENT_LUA } from './lua.js';
import { eventJson, type RunEventData } from './run-events.js';
import { isRunHash, runStateFrom, type RunHash, type RunState } from './run-hash.js';
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

/** The run fields a tool call needs (HMGET, not HGETALL: the run hash grows with each step). */
const TOOL_CALL_RUN_FIELDS = [F.spec, F.status, F.depth, F.owner, F.parentRunId, F.rootRunId, F.createdAt];

/**
 * KEYS: the step's tool-call hash, run, events, then the run keys of the run's ancestors.
 * ARGV: index, running marker JSON, maxlen, `tool.started` event data JSON ('' for none), then
 * the run fields to read. One round trip to begin a tool call; returns {state, …}:
 * {'done', stored result} if the call finished before; {'ended', run fields…} if the run is gone
 * or over, {'ancestor_over', run fields…} if an ancestor is (a cancel of the tree); else it marks
 * the attempt running, appends `tool.started` and returns {'begun', run fields…, the marker of an
 * earlier attempt}.
 */
const BEGIN_TOOL_CALL = `${RUN_OVER_LUA}${XADD_EVENT_LUA}
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then return { 'done', stored } end
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local run = redis.call('HMGET', KEYS[2], unpack(fields))
local out = { 'ended' }
for i = 1, #run do out[#out + 1] = run[i] end
if runOver(run[2]) then return out end
for k = 4, #KEYS do
  if runOver(redis.call('HGET', KEYS[k], ${lua(F.status)})) then
    out[1] = 'ancestor_over'
    return out
  end
end
out[1] = 'begun'
local field = ARGV[1] .. ${lua(T.runningSuffix)}
out[#out + 1] = redis.call('HGET', KEYS[1], field)
redis.call('HSET', KEYS[1], field, ARGV[2])
if ARGV[4] ~= '' then xadd(KEYS[3], ARGV[3], 'tool.started', ARGV[4]) end
return out
`;

/**
 * KEYS: the step's tool-call hash, events, then (when the round's size is known) run, messages
 * and the ancestors' run hashes. ARGV: index, result JSON, maxlen, event data JSON, then depth,
 * the number of calls in the round and this call's `tool` message JSON.
 * Stores a tool result unless one is stored, and only then appends `tool.completed`. The call
 * that stores the round's last result also appends the round's `tool` messages, in call order,
 * exactly as the transcript's appendRound would (same marker, same counters), so the next step
 * finds its transcript complete and writes nothing before its model call. If a call of the
 * round has no result (its job failed for good) or its result came without a message (stored by
 * a worker of an earlier version), nothing is appended here and the next step appends the
 * messages itself. Returns the stored result (this one, or the earlier one).
 */
const COMPLETE_TOOL_CALL = `${APPEND_ROUND_LUA}${XADD_EVENT_LUA}
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return redis.call('HGET', KEYS[1], ARGV[1]) end
xadd(KEYS[2], ARGV[3], 'tool.completed', ARGV[4])
if #KEYS < 4 then return ARGV[2] end
redis.call('HSET', KEYS[1], ARGV[1] .. ${lua(T.messageSuffix)}, ARGV[7])
local fields = {}
for i = 0, tonumber(ARGV[6]) - 1 do fields[#fields + 1] = i .. ${lua(T.messageSuffix)} end
local msgs = redis.call('HMGET', KEYS[1], unpack(fields))
for i = 1, #fields do if not msgs[i] then return ARGV[2] end end
local ancestors = {}
for k = 5, #KEYS do ancestors[#ancestors + 1] = KEYS[k] end
if appendRound(KEYS[3], KEYS[4], ancestors, ARGV[5], msgs) == 1 then redis.call('HDEL', KEYS[1], unpack(fields)) end
return ARGV[2]
`;

declare module 'ioredis' {
  interface RedisCommander<Context extends ClientContext = { type: 'default' }> {
    agentqBeginToolCall(numKeys: number, ...keysAndArgs: Array<string | number>): Result<Array<string | null>, Context>;
  }
}

/** How a tool call can begin: done before, nothing to do, or begun (with an earlier attempt's marker). */
export type ToolCallStart =
  | { kind: 'done'; result: ToolResultRecord }
  /** The run is gone or over, or (`ancestorOver`) an ancestor is: the call does not run. */
  | { kind: 'ended'; run: RunState | null; ancestorOver?: boolean }
  | { kind: 'begun'; run: RunState; interrupted: ToolCallRunning | null };

/** Tool calls of a run's steps: begun once per attempt, a result stored once per call. */
export class ToolCalls {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    redis.defineCommand('agentqBeginToolCall', { lua: BEGIN_TOOL_CALL });
  }

  private keys(runId: string) {
    return runKeys(this.prefix, runId);
  }

  /**
   * Begins a tool call in one round trip: `done` with the result if the call finished before;
   * `ended` if the run or one of its `ancestors` is gone or over; else the attempt is marked
   * running, `tool.started` appended (unless `event` is omitted, for a resumed job), and
   * `interrupted` holds the marker of an earlier attempt that never finished (its worker died).
   */
  async begin(runId: string, depth: number, index: number, attempts: number, opts: { ancestors?: string[]; event?: RunEventData<'tool.started'> } = {}): Promise<ToolCallStart> {
    const k = this.keys(runId);
    const { ancestors = [], event } = opts;
    const marker: ToolCallRunning = { attempts, started_at: new Date().toISOString() };
    const r = await this.redis.agentqBeginToolCall(
      3 + ancestors.length,
      k.toolCalls(depth),
      k.run,
      k.events,
      ...ancestors.map((a) => this.keys(a).run),
      T.result(index),
      JSON.stringify(marker),
      EVENTS_MAXLEN,
      event ? eventJson('tool.started', runId, event) : '',
      ...TOOL_CALL_RUN_FIELDS,
    );
    if (r[0] === 'done') return { kind: 'done', result: JSON.parse(r[1]!) };
    const h: RunHash = {};
    TOOL_CALL_RUN_FIELDS.forEach((f, i) => {
      const v = r[1 + i];
      if (v !== null && v !== undefined) h[f] = v;
    });
    const run = isRunHash(h) ? runStateFrom(runId, h) : null;
    if (r[0] === 'ancestor_over') return { kind: 'ended', run, ancestorOver: true };
    if (r[0] !== 'begun' || !run) return { kind: 'ended', run };
    const prev = r[1 + TOOL_CALL_RUN_FIELDS.length];
    return { kind: 'begun', run, interrupted: prev ? JSON.parse(prev) : null };
  }

  /** Forgets an attempt that never reached the tool, so the next one is not taken for a rerun. */
  async clearRunning(runId: string, depth: number, index: number): Promise<void> {
    await this.redis.hdel(this.keys(runId).toolCalls(depth), T.running(index));
  }

  /**
   * Stores a tool result unless one is stored already and, if this one is, appends
   * `tool.completed` with `event`: one round trip. With `round` (the run and the number of
   * calls in the step), the call that stores the round's last result also appends the round's
   * `tool` messages in call order (see COMPLETE_TOOL_CALL). Returns the result that is stored.
   *
   * Ordered: the script is sent at once as EVAL (never EVALSHA, whose NOSCRIPT fallback would
   * resend it after later commands), so whatever this connection sends after the call runs
   * after it in Redis. The tool-worker relies on that: it completes the job on the same
   * connection without waiting for this reply, and the next step still finds the result.
   */
  async complete(
    runId: string,
    depth: number,
    index: number,
    rec: ToolResultRecord,
    event: RunEventData<'tool.completed'>,
    round?: { run: RunState; count: number },
  ): Promise<ToolResultRecord> {
    const k = this.keys(runId);
    const head = [k.toolCalls(depth), k.events];
    const args = [T.result(index), JSON.stringify(rec), EVENTS_MAXLEN, eventJson('tool.completed', runId, event)];
    const stored = round
      ? await this.redis.eval(
          COMPLETE_TOOL_CALL,
          4 + round.run.spec.ancestors.length,
          ...head,
          k.run,
          k.messages,
          ...round.run.spec.ancestors.map((a) => this.keys(a).run),
          ...args,
          depth,
          round.count,
          JSON.stringify(toolMessage(rec.id, rec.output)),
        )
      : await this.redis.eval(COMPLETE_TOOL_CALL, 2, ...head, ...args);
    return JSON.parse(stored as string) as ToolResultRecord;
  }
}

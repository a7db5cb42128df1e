import type { Redis } from 'ioredis';
import { globalKeys, runKeys } from './keys.js';
import { APPEND_TOOL_MESSAGES, BEGIN_TOOL_CALL, COMMIT_STEP, COMPLETE_TOOL_CALL, FINISH_RUN, START_RUN, TOOL_CALL_RUN_FIELDS } from './run-store-scripts.js';
import type { AssistantMessage, ChatMessage, ToolCall } from './schemas/message.js';
import type { BudgetName, RunObject, RunSpec, RunStatus, StopReason } from './schemas/run.js';
import { isTerminal } from './schemas/run.js';
import { USAGE_FIELDS, type Usage } from './schemas/usage.js';
import type { RunEvent, RunEventType } from './schemas/events.js';

/** A model step as stored: the assistant message and what it cost. */
export interface StepRecord {
  depth: number;
  status: 'completed';
  model: string;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  started_at: string;
  completed_at: string;
  message: AssistantMessage;
  /** Set when the call was made with tools disabled because a budget ran out. */
  budget?: BudgetName;
}

/** The outcome of one tool call as stored under its call (never executed again). */
export interface ToolResultRecord {
  id: string;
  name: string;
  status: 'completed' | 'failed';
  output: string;
  is_error: boolean;
  attempts: number;
  duration_ms: number;
  started_at: string;
  completed_at: string;
  subrun_ids?: string[];
}

/** A tool call in flight, for `/steps` while it runs. */
interface ToolRunning {
  attempts: number;
  started_at: string;
}

/** What a worker reads of a run. */
export interface RunState {
  id: string;
  spec: RunSpec;
  status: RunStatus;
  depth: number;
  owner: string;
  parentRunId: string | null;
  rootRunId: string;
  createdAt: string;
  usage: Usage;
  usageTotal: Usage;
}

export interface NewRun {
  id: string;
  owner: string;
  spec: RunSpec;
  messages: ChatMessage[];
  parentRunId?: string | null;
  rootRunId?: string;
  createdAt?: Date;
}

export interface FinishInput {
  status: Exclude<RunStatus, 'queued' | 'running'>;
  stopReason: StopReason;
  output?: AssistantMessage | null;
  outputParsed?: unknown;
  error?: { code: string; message: string } | null;
}

/** Told of each run transition once, by the process whose write made it (for metrics). */
export interface RunObserver {
  runCreated?(spec: RunSpec): void;
  runStarted?(runId: string): void;
  runFinished?(run: RunObject, spec: RunSpec): void;
}

const EVENTS_MAXLEN = 10_000;

function parseJson<T>(s: string | undefined | null, fallback: T): T {
  if (s === undefined || s === null || s === '') return fallback;
  return JSON.parse(s) as T;
}

function usageFrom(h: Record<string, string>, p: 'u:' | 'ut:'): Usage {
  const u = {} as Usage;
  for (const f of USAGE_FIELDS) u[f] = Number(h[p + f] ?? 0);
  return u;
}

/** The run store: run records, transcripts, steps and events, in Redis only. */
export class RunStore {
  readonly prefix: string;
  readonly retentionSeconds: number;
  private readonly redis: Redis;
  private readonly observer?: RunObserver;

  constructor(opts: { redis: Redis; prefix: string; retentionSeconds?: number; observer?: RunObserver }) {
    this.redis = opts.redis;
    this.observer = opts.observer;
    this.prefix = opts.prefix;
    this.retentionSeconds = opts.retentionSeconds ?? 7 * 24 * 3600;
    this.redis.defineCommand('agentqCommitStep', { lua: COMMIT_STEP });
    this.redis.defineCommand('agentqAppendToolMessages', { lua: APPEND_TOOL_MESSAGES });
    this.redis.defineCommand('agentqStartRun', { lua: START_RUN, numberOfKeys: 2 });
    this.redis.defineCommand('agentqFinishRun', { lua: FINISH_RUN });
    this.redis.defineCommand('agentqBeginToolCall', { lua: BEGIN_TOOL_CALL, numberOfKeys: 3 });
  }

  keys(runId: string) {
    return runKeys(this.prefix, runId);
  }

  get global() {
    return globalKeys(this.prefix);
  }

  /** Stores a new run (record, first messages, index entry, `run.queued` event); returns it as the API shows it. */
  async createRun(run: NewRun): Promise<RunObject> {
    const k = this.keys(run.id);
    const createdAt = (run.createdAt ?? new Date()).toISOString();
    const fields: Record<string, string> = {
      spec: JSON.stringify(run.spec),
      status: 'queued',
      depth: '0',
      owner: run.owner,
      created_at: createdAt,
      root_run_id: run.rootRunId ?? run.id,
    };
    if (run.parentRunId) fields.parent_run_id = run.parentRunId;
    const tx = this.redis.multi().hset(k.run, fields);
    if (run.messages.length) tx.rpush(k.messages, ...run.messages.map((m) => JSON.stringify(m)));
    tx.zadd(this.global.runIndex(run.owner), 0, run.id);
    // Ids start with their creation time, so the index sheds the ids of long-expired runs by
    // range as it grows (twice the retention: a run outliving it is merely no longer listed).
    const cutoff = Date.parse(createdAt) - 2 * this.retentionSeconds * 1000;
    if (cutoff > 0) tx.zremrangebylex(this.global.runIndex(run.owner), '-', `(run_${cutoff.toString(36).padStart(9, '0')}`);
    tx.xadd(k.events, 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'type', 'run.queued', 'data', JSON.stringify({ run_id: run.id }));
    const res = (await tx.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    this.observer?.runCreated?.(run.spec);
    return this.runObjectFrom(run.id, fields);
  }

  /** Removes a run that could not be enqueued, so that a client never sees a run nobody runs. */
  async deleteRun(runId: string, owner: string): Promise<void> {
    const k = this.keys(runId);
    await this.redis
      .multi()
      .del(k.run, k.messages, k.steps, k.events, k.context)
      .zrem(this.global.runIndex(owner), runId)
      .exec();
  }

  async getState(runId: string): Promise<RunState | null> {
    const h = await this.redis.hgetall(this.keys(runId).run);
    return h.spec ? this.stateFrom(runId, h) : null;
  }

  private stateFrom(runId: string, h: Record<string, string>): RunState {
    return {
      id: runId,
      spec: JSON.parse(h.spec),
      status: h.status as RunStatus,
      depth: Number(h.depth ?? 0),
      owner: h.owner,
      parentRunId: h.parent_run_id ?? null,
      rootRunId: h.root_run_id ?? runId,
      createdAt: h.created_at,
      usage: usageFrom(h, 'u:'),
      usageTotal: usageFrom(h, 'ut:'),
    };
  }

  /** Tokens used so far by a run and all its descendants (its usage_total). */
  async treeTokens(runId: string): Promise<number> {
    return Number((await this.redis.hget(this.keys(runId).run, 'ut:total_tokens')) ?? 0);
  }

  /** The run object of the API, or null if there is no such run (or it expired). */
  async getRun(runId: string): Promise<RunObject | null> {
    const h = await this.redis.hgetall(this.keys(runId).run);
    return h.spec ? this.runObjectFrom(runId, h) : null;
  }

  /** The run object if it exists and belongs to `owner` (one read), else null. */
  async getOwnRun(runId: string, owner: string): Promise<RunObject | null> {
    const h = await this.redis.hgetall(this.keys(runId).run);
    return h.spec && h.owner === owner ? this.runObjectFrom(runId, h) : null;
  }

  /** The owner of a run (for tenant checks), or null. */
  async getOwner(runId: string): Promise<string | null> {
    return this.redis.hget(this.keys(runId).run, 'owner');
  }

  private runObjectFrom(runId: string, h: Record<string, string>): RunObject {
    const spec = JSON.parse(h.spec) as RunSpec;
    return {
      id: runId,
      object: 'run',
      status: h.status as RunStatus,
      stop_reason: (h.stop_reason || null) as StopReason | null,
      model: spec.model,
      depth: Number(h.depth ?? 0),
      max_depth: spec.max_depth,
      parent_run_id: h.parent_run_id ?? null,
      root_run_id: h.root_run_id ?? runId,
      output: parseJson(h.output, null),
      output_parsed: parseJson(h.output_parsed, null),
      error: parseJson(h.error, null),
      usage: usageFrom(h, 'u:'),
      usage_total: usageFrom(h, 'ut:'),
      metadata: spec.metadata ?? {},
      created_at: h.created_at,
      started_at: h.started_at || null,
      completed_at: h.completed_at || null,
    };
  }

  /** Runs of one owner, newest first; `after` is the last id of the previous page. */
  async listRuns(owner: string, opts: { limit: number; after?: string; status?: RunStatus }): Promise<{ data: RunObject[]; next: string | null }> {
    const index = this.global.runIndex(owner);
    const data: RunObject[] = [];
    let cursor = opts.after ? `(${opts.after}` : '+';
    const batch = Math.max(opts.limit, 50);
    // With a status filter a page may take several index batches; stop after a bounded scan.
    for (let scanned = 0; data.length < opts.limit && scanned < 20_000; ) {
      const ids = await this.redis.zrevrangebylex(index, cursor, '-', 'LIMIT', 0, batch);
      if (!ids.length) return { data, next: null };
      scanned += ids.length;
      const pipe = this.redis.pipeline();
      for (const id of ids) pipe.hgetall(this.keys(id).run);
      const rows = (await pipe.exec()) ?? [];
      const expired: string[] = [];
      for (let i = 0; i < ids.length; i++) {
        const h = rows[i][1] as Record<string, string>;
        cursor = `(${ids[i]}`;
        if (!h?.spec) {
          expired.push(ids[i]);
          continue;
        }
        if (opts.status && h.status !== opts.status) continue;
        data.push(this.runObjectFrom(ids[i], h));
        if (data.length === opts.limit) {
          if (expired.length) await this.redis.zrem(index, ...expired);
          const more = await this.redis.zrevrangebylex(index, cursor, '-', 'LIMIT', 0, 1);
          return { data, next: more.length ? ids[i] : null };
        }
      }
      if (expired.length) await this.redis.zrem(index, ...expired);
      if (ids.length < batch) return { data, next: null };
    }
    return { data, next: data.length ? data[data.length - 1].id : null };
  }

  /** Records a sub-run under its parent (for `/children` and cascading cancel). */
  async addChild(parentId: string, childId: string): Promise<void> {
    await this.redis.zadd(this.keys(parentId).children, 'NX', Date.now(), childId);
  }

  /** The sub-runs a run started, oldest first. */
  async getChildren(runId: string): Promise<RunObject[]> {
    const ids = await this.redis.zrange(this.keys(runId).children, '0', '-1');
    const runs = await Promise.all(ids.map((id) => this.getRun(id)));
    return runs.filter((r): r is RunObject => r !== null);
  }

  async getMessages(runId: string): Promise<ChatMessage[]> {
    const raw = await this.redis.lrange(this.keys(runId).messages, 0, -1);
    return raw.map((m) => JSON.parse(m));
  }

  /**
   * Everything a turn needs in one round trip: the run, its transcript, the step already
   * committed at this depth (a redelivery), and whether the previous round's tool messages are
   * in the transcript (the round's last tool result appends them; see loadToolRound if not).
   */
  async loadTurn(runId: string, depth: number) {
    const k = this.keys(runId);
    const res = (await this.redis.pipeline().hgetall(k.run).lrange(k.messages, 0, -1).hget(k.steps, String(depth)).exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    const h = res[0][1] as Record<string, string>;
    if (!h.spec) return null;
    const cur = res[2][1] as string | null;
    return {
      run: this.stateFrom(runId, h),
      messages: (res[1][1] as string[]).map((m) => JSON.parse(m) as ChatMessage),
      step: cur ? (JSON.parse(cur) as StepRecord) : null,
      toolMessagesAppended: depth > 0 && h[`m:t:${depth - 1}`] === '1',
    };
  }

  /** The step at `depth` and the tool results stored under its calls (by call index). */
  async loadToolRound(runId: string, depth: number): Promise<{ step: StepRecord | null; results: Map<number, ToolResultRecord> }> {
    const k = this.keys(runId);
    const res = (await this.redis.pipeline().hget(k.steps, String(depth)).hgetall(k.tools(depth)).exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    const raw = res[0][1] as string | null;
    const results = new Map<number, ToolResultRecord>();
    for (const [f, v] of Object.entries(res[1][1] as Record<string, string>)) if (!f.includes(':')) results.set(Number(f), JSON.parse(v));
    return { step: raw ? (JSON.parse(raw) as StepRecord) : null, results };
  }

  /** Moves a queued run to running; true (and a `run.started` event) the first time only. */
  async startRun(runId: string): Promise<boolean> {
    const k = this.keys(runId);
    const r = await (this.redis as any).agentqStartRun(k.run, k.events, new Date().toISOString(), EVENTS_MAXLEN, JSON.stringify({ run_id: runId }));
    if (r) this.observer?.runStarted?.(runId);
    return Boolean(r);
  }

  /**
   * Appends a step's assistant message, counts its usage and appends `step.completed` (with
   * `event`), once per depth, in one round trip. Returns the
   * step that is stored: this one, or the one a previous attempt stored (which then wins,
   * since the model may answer differently twice). `null` if the run has ended meanwhile.
   */
  async commitStep(run: RunState, step: StepRecord, event: Record<string, unknown>): Promise<StepRecord | null> {
    const k = this.keys(run.id);
    const ancestors = run.spec.ancestors.map((a) => this.keys(a).run);
    const r = await (this.redis as any).agentqCommitStep(
      4 + ancestors.length,
      k.run,
      k.messages,
      k.steps,
      k.events,
      ...ancestors,
      step.depth,
      JSON.stringify(step.message),
      JSON.stringify(step),
      step.usage.prompt_tokens,
      step.usage.completion_tokens,
      step.usage.total_tokens,
      EVENTS_MAXLEN,
      JSON.stringify(event),
    );
    if (r === 'terminal' || r === 'missing') return null;
    if (r === null || r === undefined) return step;
    return JSON.parse(r) as StepRecord;
  }

  /** Appends the `tool` messages of the step at `depth`, once. */
  async appendToolMessages(run: RunState, depth: number, messages: ChatMessage[]): Promise<boolean> {
    const k = this.keys(run.id);
    const ancestors = run.spec.ancestors.map((a) => this.keys(a).run);
    const r = await (this.redis as any).agentqAppendToolMessages(2 + ancestors.length, k.run, k.messages, ...ancestors, depth, ...messages.map((m) => JSON.stringify(m)));
    return r === 1;
  }

  /** Ends a run once: status, output, terminal event, expiry of all its keys. */
  async finishRun(runId: string, input: FinishInput): Promise<{ run: RunObject; spec: RunSpec } | null> {
    const k = this.keys(runId);
    const h = await this.redis.hgetall(k.run);
    if (!h.spec || isTerminal(h.status as RunStatus)) return null;
    const completedAt = new Date().toISOString();
    const depth = Number(h.depth ?? 0);
    const fields = {
      status: input.status,
      stop_reason: input.stopReason,
      completed_at: completedAt,
      output: input.output ? JSON.stringify(input.output) : '',
      output_parsed: input.outputParsed === undefined ? '' : JSON.stringify(input.outputParsed),
      error: input.error ? JSON.stringify(input.error) : '',
    };
    const run = this.runObjectFrom(runId, { ...h, ...fields, started_at: h.started_at || completedAt });
    const toolKeys = Array.from({ length: depth + 1 }, (_, d) => k.tools(d));
    const others = [k.messages, k.steps, k.children, k.context, this.global.webhookDeliveries(runId), ...toolKeys];
    const done = await (this.redis as any).agentqFinishRun(
      2 + others.length,
      k.run,
      k.events,
      ...others,
      this.retentionSeconds,
      EVENTS_MAXLEN,
      `run.${input.status}`,
      fields.status,
      fields.stop_reason,
      fields.completed_at,
      fields.output,
      fields.output_parsed,
      fields.error,
      JSON.stringify({ run }),
    );
    if (done !== 1) return null;
    const spec = JSON.parse(h.spec) as RunSpec;
    this.observer?.runFinished?.(run, spec);
    return { run, spec };
  }

  async getSteps(runId: string) {
    const k = this.keys(runId);
    const stepsHash = await this.redis.hgetall(k.steps);
    const steps = Object.values(stepsHash)
      .map((s) => JSON.parse(s) as StepRecord)
      .sort((a, b) => a.depth - b.depth);
    const pipe = this.redis.pipeline();
    for (const s of steps) pipe.hgetall(k.tools(s.depth));
    const tools = (await pipe.exec()) ?? [];
    return steps.map((s, i) => {
      const h = (tools[i]?.[1] ?? {}) as Record<string, string>;
      const calls = (s.message.tool_calls ?? []).map((tc: ToolCall, index: number) => {
        const done = h[String(index)] ? (JSON.parse(h[String(index)]) as ToolResultRecord) : null;
        const running = h[`${index}:running`] ? (JSON.parse(h[`${index}:running`]) as ToolRunning) : null;
        return {
          id: tc.id,
          name: tc.function.name,
          arguments: tc.function.arguments,
          status: done ? done.status : running ? 'running' : 'queued',
          output: done?.output ?? null,
          is_error: done?.is_error ?? false,
          attempts: done?.attempts ?? running?.attempts ?? 0,
          duration_ms: done?.duration_ms ?? null,
          ...(done?.subrun_ids ? { subrun_ids: done.subrun_ids } : {}),
        };
      });
      return {
        depth: s.depth,
        status: s.status,
        model: s.model,
        usage: s.usage,
        started_at: s.started_at,
        completed_at: s.completed_at,
        tool_calls: calls,
      };
    });
  }

  /**
   * Begins a tool call in one round trip: `done` with the result if the call finished before;
   * `ended` if the run is gone or over; else the attempt is marked running, `tool.started`
   * appended (unless `event` is omitted, for a resumed job), and `interrupted` holds the marker
   * of an earlier attempt that never finished (its worker died), if any.
   */
  async beginToolCall(
    runId: string,
    depth: number,
    index: number,
    attempts: number,
    event?: Record<string, unknown>,
  ): Promise<{ kind: 'done'; result: ToolResultRecord } | { kind: 'ended'; run: RunState | null } | { kind: 'begun'; run: RunState; interrupted: ToolRunning | null }> {
    const k = this.keys(runId);
    const marker: ToolRunning = { attempts, started_at: new Date().toISOString() };
    const r = (await (this.redis as any).agentqBeginToolCall(
      k.tools(depth),
      k.run,
      k.events,
      String(index),
      JSON.stringify(marker),
      EVENTS_MAXLEN,
      event ? JSON.stringify(event) : '',
      ...TOOL_CALL_RUN_FIELDS,
    )) as Array<string | null>;
    if (r[0]) return { kind: 'done', result: JSON.parse(r[0]) };
    const h: Record<string, string> = {};
    TOOL_CALL_RUN_FIELDS.forEach((f, i) => {
      const v = r[1 + i];
      if (v !== null && v !== undefined) h[f] = v;
    });
    const run = h.spec ? this.stateFrom(runId, h) : null;
    if (!run || isTerminal(run.status)) return { kind: 'ended', run };
    const prev = r[1 + TOOL_CALL_RUN_FIELDS.length];
    return { kind: 'begun', run, interrupted: prev ? JSON.parse(prev) : null };
  }

  /** Forgets an attempt that never reached the tool, so the next one is not taken for a rerun. */
  async clearToolRunning(runId: string, depth: number, index: number): Promise<void> {
    await this.redis.hdel(this.keys(runId).tools(depth), `${index}:running`);
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
   * connection without waiting for this reply, and the next turn still finds the result.
   */
  async completeToolCall(
    runId: string,
    depth: number,
    index: number,
    rec: ToolResultRecord,
    event: Record<string, unknown>,
    round?: { run: RunState; count: number },
  ): Promise<ToolResultRecord> {
    const k = this.keys(runId);
    const head = [k.tools(depth), k.events];
    const args = [String(index), JSON.stringify(rec), EVENTS_MAXLEN, JSON.stringify(event)];
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

  /** Appends an event to the run's stream; returns its id. */
  async appendEvent(runId: string, type: RunEventType, data: Record<string, unknown>): Promise<string> {
    return (await this.redis.xadd(this.keys(runId).events, 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'type', type, 'data', JSON.stringify(data))) as string;
  }

  /** Events after `afterId` (exclusive; '0' for all), oldest first. */
  async readEvents(runId: string, afterId = '0', count = 1000): Promise<RunEvent[]> {
    const start = afterId === '0' ? '-' : `(${afterId}`;
    const rows = await this.redis.xrange(this.keys(runId).events, start, '+', 'COUNT', String(count));
    return rows.map(([id, f]) => eventFrom(id, f));
  }

  /** The tool catalog that tool-workers publish (name, description, input_schema, server). */
  async getToolCatalog(): Promise<ToolCatalogEntry[]> {
    const raw = await this.redis.get(this.global.toolCatalog);
    return raw ? JSON.parse(raw) : [];
  }

  async setToolCatalog(tools: ToolCatalogEntry[]): Promise<void> {
    await this.redis.set(this.global.toolCatalog, JSON.stringify(tools));
  }
}

/** The `tool` message a call's result becomes in the transcript. */
export function toolMessage(toolCallId: string, content: string): ChatMessage {
  return { role: 'tool', tool_call_id: toolCallId, content };
}

/** A tool as the API lists it and the model is offered it. */
export interface ToolCatalogEntry {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
  server: string;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean };
}

/** Parses one stream entry (`type`, `data` fields). */
export function eventFrom(id: string, fields: string[]): RunEvent {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]] = fields[i + 1];
  return { id, type: f.type as RunEventType, data: parseJson(f.data, {}) };
}

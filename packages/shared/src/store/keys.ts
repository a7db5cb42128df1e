/**
 * Redis keys of one deployment. A run's keys share the hash tag `{runId}` so that they sit on
 * one Redis Cluster slot and its Lua scripts may touch them together.
 */
export function runKeys(prefix: string, runId: string) {
  const base = `${prefix}:r:{${runId}}`;
  return {
    run: `${base}:run`,
    messages: `${base}:messages`,
    steps: `${base}:steps`,
    events: `${base}:events`,
    children: `${base}:children`,
    context: `${base}:context`,
    webhookDeliveries: `${base}:webhook-deliveries`,
    /** The tool calls of the step at `depth`: results, running markers, pending tool messages. */
    toolCalls: (depth: number) => `${base}:tools:${depth}`,
  };
}
export type RunKeys = ReturnType<typeof runKeys>;

export function globalKeys(prefix: string) {
  return {
    /** Sorted set (all scores 0, ordered by member) of `<runId>` per owner: the listing index. */
    runIndex: (owner: string) => `${prefix}:runs:${owner}`,
    /** The tool catalog published by tool-workers. */
    toolCatalog: `${prefix}:tool-catalog`,
    idempotency: (owner: string, key: string) => `${prefix}:idem:${owner}:${key}`,
    /**
     * Sorted set (score: creation time) of runs written but whose first step may not be
     * enqueued yet: written with the run, removed once its first job is in; what is left by a
     * process that died in between is swept (Runs.sweepPending).
     */
    pendingRuns: `${prefix}:runs-pending`,
    /** Admission (see runs/admission.ts): a key's line of root runs waiting to start (a sorted set by arrival). */
    laneOf: `${prefix}:adm:lane:`,
    /** Admission: the runs of a key that are admitted and not ended (a set). */
    activeOf: `${prefix}:adm:active:`,
    /** Admission: keys with runs in their line, by virtual time (a sorted set). */
    backlog: `${prefix}:adm:backlog`,
    /** Admission: each key's limits as the API published them (a hash: owner, `*` default, `#total`). */
    limits: `${prefix}:adm:limits`,
    /** Admission: runs admitted and not ended, all keys together. */
    activeTotal: `${prefix}:adm:total`,
    /** Admission: the virtual clock of fair queueing. */
    vclock: `${prefix}:adm:vclock`,
    /** Admission: every key that has had runs (for the reconciling sweep). */
    owners: `${prefix}:adm:owners`,
    /** A key's usage on one UTC day (a hash: tokens). */
    usage: (owner: string, day: string) => `${prefix}:usage:${owner}:${day}`,
    /** A key's `/v1` requests in one minute. */
    requests: (owner: string, minute: number) => `${prefix}:rpm:${owner}:${minute}`,
    /** The pub/sub channel on which a cancel reaches every worker process. */
    cancelChannel: `${prefix}:cancel`,
  };
}

/**
 * Field names of a run's hash, for TypeScript and the Lua scripts alike. Usage counters are
 * `u:<field>` (the run's own) and `ut:<field>` (the run and its sub-runs); the markers make a
 * redelivered job's write happen once.
 */
export const RUN_FIELDS = {
  spec: 'spec',
  status: 'status',
  depth: 'depth',
  owner: 'owner',
  createdAt: 'created_at',
  startedAt: 'started_at',
  completedAt: 'completed_at',
  stopReason: 'stop_reason',
  output: 'output',
  outputParsed: 'output_parsed',
  error: 'error',
  parentRunId: 'parent_run_id',
  rootRunId: 'root_run_id',
  /** On a root run: how many sub-runs its tree has (see RunRecords.growTree). */
  treeRuns: 'tree_runs',
  usagePrefix: 'u:',
  usageTotalPrefix: 'ut:',
  /** `m:a:<depth>`: the step at this depth is committed (its assistant message appended). */
  stepMarkerPrefix: 'm:a:',
  /** `m:t:<depth>`: the tool messages of the step at this depth are appended. */
  roundMarkerPrefix: 'm:t:',
} as const;

/**
 * Field names of a step's tool-call hash, per call index `i`: `i` holds the stored result,
 * `i:running` the marker of an attempt in flight, `i:msg` the call's `tool` message until the
 * round's last result appends them all.
 */
export const TOOL_CALL_FIELDS = {
  result: (index: number | string) => String(index),
  running: (index: number | string) => `${index}${TOOL_CALL_FIELDS.runningSuffix}`,
  message: (index: number | string) => `${index}${TOOL_CALL_FIELDS.messageSuffix}`,
  runningSuffix: ':running',
  messageSuffix: ':msg',
} as const;

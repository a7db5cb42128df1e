import { treeTag } from '../core/ids.js';

/**
 * Redis keys of one deployment. Every key of a run tree shares the hash tag `{<tree tag>}`
 * (the last characters of the root's id, which every sub-run's id ends with too), so that a
 * tree sits on one Redis Cluster slot and its Lua scripts may touch several of its runs (usage
 * summed up the tree, ancestors checked before a step) together.
 */
export function runKeys(prefix: string, runId: string) {
  const base = `${prefix}:r:{${treeTag(runId)}}:${runId}`;
  return {
    run: `${base}:run`,
    messages: `${base}:messages`,
    steps: `${base}:steps`,
    events: `${base}:events`,
    children: `${base}:children`,
    context: `${base}:context`,
    webhookDeliveries: `${base}:webhook-deliveries`,
    /**
     * The run's requests for an answer (a hash): `<action id>` holds the request (fixed when it
     * is made), `<action id>:d` its decision, claimed once (see store/actions.ts).
     */
    actions: `${base}:actions`,
    /** The requests of the run and of its sub-runs that wait (a sorted set by creation time). */
    pendingActions: `${base}:actions-pending`,
    /** The tool calls of the step at `depth`: results, running markers, pending tool messages. */
    toolCalls: (depth: number) => `${base}:tools:${depth}`,
  };
}
export type RunKeys = ReturnType<typeof runKeys>;

export function globalKeys(prefix: string) {
  // Admission's keys share one tag, so that its script may touch them together; the pending
  // set is among them, since a run admitted is pending until its first step is enqueued.
  const adm = `${prefix}:{adm}`;
  return {
    /** Sorted set (all scores 0, ordered by member) of `<runId>` per tenant: the listing index. */
    runIndex: (tenant: string) => `${prefix}:runs:${tenant}`,
    /** The tool catalog published by tool-workers. */
    toolCatalog: `${prefix}:tool-catalog`,
    idempotency: (tenant: string, key: string) => `${prefix}:idem:${tenant}:${key}`,
    /**
     * Sorted set (score: creation time) of runs whose first step may not be enqueued yet:
     * written before the run, removed once its first job is in (or it waits in its tenant's line);
     * what a process that died in between leaves is swept (Runs.sweepPending).
     */
    pendingRuns: `${adm}:runs-pending`,
    /** Admission (see runs/admission.ts): a tenant's line of runs waiting to start (a sorted set by arrival). */
    lineOf: `${adm}:line:`,
    /** Admission: the runs of a key that are admitted and not ended (a set). */
    activeOf: `${adm}:active:`,
    /** Admission: the runs of a tenant that wait for an answer (a set): they hold no slot meanwhile. */
    waitingOf: `${adm}:waiting:`,
    /** Admission: the runs of a tenant that wait on their sub-runs (a set): they hold no slot meanwhile. */
    parkedOf: `${adm}:parked:`,
    /** Admission: keys with runs in their line, by virtual time (a sorted set). */
    backlog: `${adm}:backlog`,
    /** Admission: each tenant's limits as the API published them (a hash: tenant, `*` default, `#total`). */
    limits: `${adm}:limits`,
    /** Admission: runs admitted and not ended, all keys together. */
    activeTotal: `${adm}:total`,
    /** Admission: the virtual clock of fair queueing. */
    vclock: `${adm}:vclock`,
    /** Admission: every key that has had runs (for the reconciling sweep). */
    tenants: `${adm}:tenants`,
    /** A key's usage on one UTC day (a hash: tokens). */
    usage: (tenant: string, day: string) => `${prefix}:usage:${tenant}:${day}`,
    /** A key's `/v1` requests in one minute. */
    requests: (tenant: string, minute: number) => `${prefix}:rpm:${tenant}:${minute}`,
    /**
     * A key's requests for an answer, every one (a sorted set by creation time): the inbox. Its
     * two sets share the tenant's tag, so that one pipeline writes both on a Cluster too.
     */
    actionInbox: (tenant: string) => `${prefix}:{inbox:${tenant}}:actions`,
    /** A key's requests that wait (a sorted set by creation time): the inbox's pending view. */
    actionInboxPending: (tenant: string) => `${prefix}:{inbox:${tenant}}:actions-pending`,
    /**
     * Requests answered whose tool job may not have been woken yet (a sorted set by time): written
     * before the answer, removed once the job is promoted; the API's sweep promotes what a process
     * that died in between left.
     */
    answeredActions: `${prefix}:actions-answered`,
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
  tenant: 'tenant',
  createdAt: 'created_at',
  startedAt: 'started_at',
  completedAt: 'completed_at',
  stopReason: 'stop_reason',
  output: 'output',
  outputParsed: 'output_parsed',
  error: 'error',
  parentRunId: 'parent_run_id',
  /** The run's metadata as JSON text (also in its spec): what a list's search reads without the spec. */
  metadata: 'metadata',
  rootRunId: 'root_run_id',
  /** The transcript's stored size in bytes (its messages' JSON), kept with every append. */
  transcriptBytes: 'transcript_bytes',
  /** On a root run: how many sub-runs its tree has (see RunRecords.reserveSubruns). */
  treeRuns: 'tree_runs',
  /** On a root run: `sr:<call>`, the sub-runs a call of the tree reserved (once per call). */
  subrunReservationPrefix: 'sr:',
  usagePrefix: 'u:',
  usageTotalPrefix: 'ut:',
  /** The run's cost, and its tree's below it, in nano-dollars (when a price is known). */
  usageCost: 'u:cost_nusd',
  usageTotalCost: 'ut:cost_nusd',
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

/**
 * Events kept per run stream (approximately: `MAXLEN ~`). The stream is trimmed when a step is
 * committed, when the run ends, and by the appends that may come many to a step (the model's
 * text as it streams, sub-runs, requests for an answer); a run's creation and start and a
 * round's `tool.*` events append without trimming, so a stream holds at most this many and one
 * step's events (trimming costs Redis a seventh of an append inside a script).
 */
export const EVENTS_MAXLEN = 10_000;

/** Field names of a run's requests hash: `<id>` holds the request, `<id>:d` its decision. */
export const ACTION_FIELDS = {
  decision: (id: string) => `${id}${ACTION_FIELDS.decisionSuffix}`,
  decisionSuffix: ':d',
} as const;

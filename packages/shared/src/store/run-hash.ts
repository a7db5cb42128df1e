import type { RunObject, RunSpec, RunStatus, StopReason } from '../core/schemas/run.js';
import { COST_FIELD, nanosToUsd, USAGE_FIELDS, type Usage } from '../core/schemas/usage.js';
import { RUN_FIELDS as F } from './keys.js';

/** What a worker reads of a run. */
export interface RunState {
  id: string;
  spec: RunSpec;
  status: RunStatus;
  depth: number;
  tenant: string;
  parentRunId: string | null;
  rootRunId: string;
  createdAt: string;
  usage: Usage;
  usageTotal: Usage;
}

/** A run's hash as Redis returns it (HGETALL, or the fields a script read). */
export type RunHash = Record<string, string>;

/** A run's spec as a reader holds it, with the size of its stored JSON (what holding it costs). */
export interface HeldSpec {
  value: RunSpec;
  bytes: number;
}

/** A spec as read from a run's hash, with its stored size. */
export const heldSpecFrom = (json: string): HeldSpec => ({
  value: JSON.parse(json) as RunSpec,
  bytes: Buffer.byteLength(json),
});

export function parseJson<T>(s: string | undefined | null, fallback: T): T {
  if (s === undefined || s === null || s === '') return fallback;
  return JSON.parse(s) as T;
}

function usageFrom(h: RunHash, prefix: string): Usage {
  const u = {} as Usage;
  for (const f of USAGE_FIELDS) u[f] = Number(h[prefix + f] ?? 0);
  // Known only once a step with a known price has been counted.
  const cost = h[prefix + COST_FIELD];
  if (cost !== undefined) u.cost_usd = nanosToUsd(Number(cost));
  return u;
}

/** True when the hash holds a run (an expired or never-made run reads as `{}`). */
export const isRunHash = (h: RunHash | null | undefined): h is RunHash => Boolean(h?.[F.spec]);

/** A run as the workers see it; `spec` if the reader holds it (else it is parsed from the hash). */
export function runStateFrom(runId: string, h: RunHash, spec: RunSpec = JSON.parse(h[F.spec]) as RunSpec): RunState {
  return {
    id: runId,
    spec,
    status: h[F.status] as RunStatus,
    depth: Number(h[F.depth] ?? 0),
    tenant: h[F.tenant],
    parentRunId: h[F.parentRunId] ?? null,
    rootRunId: h[F.rootRunId] ?? runId,
    createdAt: h[F.createdAt],
    usage: usageFrom(h, F.usagePrefix),
    usageTotal: usageFrom(h, F.usageTotalPrefix),
  };
}

/** A run as the API shows it. */
export function runObjectFrom(runId: string, h: RunHash): RunObject {
  const spec = JSON.parse(h[F.spec]) as RunSpec;
  return {
    id: runId,
    object: 'run',
    status: h[F.status] as RunStatus,
    stop_reason: (h[F.stopReason] || null) as StopReason | null,
    model: spec.model,
    depth: Number(h[F.depth] ?? 0),
    max_depth: spec.max_depth,
    parent_run_id: h[F.parentRunId] ?? null,
    root_run_id: h[F.rootRunId] ?? runId,
    output: parseJson(h[F.output], null),
    output_parsed: parseJson(h[F.outputParsed], null),
    error: parseJson(h[F.error], null),
    usage: usageFrom(h, F.usagePrefix),
    usage_total: usageFrom(h, F.usageTotalPrefix),
    agent: spec.agent ?? null,
    metadata: spec.metadata ?? {},
    created_at: h[F.createdAt],
    started_at: h[F.startedAt] || null,
    completed_at: h[F.completedAt] || null,
  };
}

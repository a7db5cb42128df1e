import type { CallView, RunView, StepView } from '../api.js';
import { isTerminal } from './format.js';
import type { LiveRun, LiveTree } from './live.js';

// The waterfall of a run: one row per run, model step and tool call, each a span on one time axis; sub-runs
// nested under the call that started them. Pure: the component draws what this returns.

export type RowKind = 'run' | 'step' | 'call';

export interface Span {
  start: number;
  end: number;
}

export interface Row {
  key: string;
  kind: RowKind;
  /** Nesting: 0 for the run, its steps 1, their calls 2, a sub-run under a call 3, … */
  level: number;
  runId: string;
  label: string;
  detail: string;
  status: string;
  start: number;
  end: number;
  /** Still going: its end is "now". */
  live: boolean;
  error: boolean;
  /** Parts spent waiting (queued for a slot, for an answer, before a retry). */
  waits: Array<Span & { label: string }>;
  /** Retries, at the time they were decided. */
  marks: Array<{ at: number; label: string }>;
  /** The times are estimates (the service did not send them). */
  estimated: boolean;
  /** For a call: the tool call id (the transcript's anchor). */
  callId?: string;
  /** For a sub-run row: whether it can be opened in place, and whether it is. */
  expandable?: boolean;
  expanded?: boolean;
}

/** A run of the tree as the page holds it: its object, steps and sub-runs, read from the API. */
export interface RunData {
  run: RunView;
  steps: StepView[];
  children: RunView[];
}

export interface TimelineInput {
  root: RunData;
  /** Sub-runs opened in place, by id (with their own steps and sub-runs). */
  expanded: Map<string, RunData>;
  live: LiveTree;
  now: number;
}

const ms = (iso: string | null | undefined): number | null => {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isFinite(t) ? t : null;
};

const SUBRUN_TOOLS = new Set(['agent_query', 'agent_query_batch']);

/** The rows of a run tree and the span of the axis. */
export function buildTimeline(input: TimelineInput): { rows: Row[]; start: number; end: number } {
  const rows: Row[] = [];
  addRun(rows, input, input.root, 0);
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const r of rows) {
    start = Math.min(start, r.start);
    end = Math.max(end, r.end);
  }
  if (!Number.isFinite(start)) start = input.now;
  if (!Number.isFinite(end) || end <= start) end = start + 1;
  return { rows, start, end };
}

function addRun(rows: Row[], input: TimelineInput, data: RunData, level: number): void {
  const { run } = data;
  const live = input.live.runs.get(run.id);
  const created = ms(run.created_at) ?? input.now;
  const started = ms(run.started_at) ?? live?.started ?? null;
  const going = !isTerminal(run.status);
  const end = ms(run.completed_at) ?? live?.ended ?? (going ? input.now : (started ?? created));
  const waits: Row['waits'] = [];
  if (started !== null && started > created) waits.push({ start: created, end: started, label: 'queued' });
  else if (started === null && going) waits.push({ start: created, end: input.now, label: 'queued' });
  rows.push({
    key: `run:${run.id}`,
    kind: 'run',
    level,
    runId: run.id,
    label: level === 0 ? 'run' : 'sub-run',
    detail: level === 0 ? run.model : run.id,
    status: run.status,
    start: created,
    end,
    live: going,
    error: run.status === 'failed',
    waits,
    marks: [],
    estimated: false,
    expandable: level > 0,
    expanded: level > 0 ? input.expanded.has(run.id) : undefined,
  });
  if (level > 0 && !input.expanded.has(run.id)) return;

  const byCall = subrunsByCall(data, input.live);
  const placed = new Set<string>();
  const steps = [...data.steps].sort((a, b) => a.depth - b.depth);
  for (const step of steps) {
    addStep(rows, input, run, step, live, level + 1);
    for (const call of step.tool_calls) {
      addCall(rows, input, run, step, call, live, level + 2);
      for (const child of byCall.get(call.id) ?? []) {
        placed.add(child.id);
        addRun(rows, input, input.expanded.get(child.id) ?? { run: child, steps: [], children: [] }, level + 3);
      }
    }
  }
  // A step in flight that /steps does not list yet: its model call, from the events.
  if (live) {
    const known = new Set(steps.map((s) => s.depth));
    for (const [depth, at] of live.stepStarted) {
      if (known.has(depth)) continue;
      const done = live.stepCompleted.get(depth) ?? null;
      rows.push({
        key: `step:${run.id}:${depth}:live`,
        kind: 'step',
        level: level + 1,
        runId: run.id,
        label: `step ${depth}`,
        detail: done === null ? (live.streamed.get(depth) ? 'streaming' : 'model call') : 'model call',
        status: done === null ? (going ? 'running' : run.status) : 'completed',
        start: at,
        end: done ?? (going ? input.now : at),
        live: done === null && going,
        error: false,
        waits: [],
        marks: retryMarks(live, depth, null),
        estimated: false,
      });
    }
  }
  // Sub-runs whose call is not known yet (or not any more).
  for (const child of data.children) {
    if (placed.has(child.id)) continue;
    addRun(rows, input, input.expanded.get(child.id) ?? { run: child, steps: [], children: [] }, level + 1);
  }
}

function retryMarks(live: LiveRun | undefined, depth: number | null, callId: string | null): Row['marks'] {
  if (!live) return [];
  return live.retries
    .filter((r) => (callId ? r.tool_call_id === callId : r.tool_call_id === null && r.depth === depth))
    .map((r) => ({
      at: r.at,
      label: `retry${r.attempt !== null ? ` (attempt ${r.attempt})` : ''}: ${r.reason}${
        r.retry_in_ms !== null ? `, in ${Math.round(r.retry_in_ms)} ms` : ''
      }`,
    }));
}

function addStep(
  rows: Row[],
  input: TimelineInput,
  run: RunView,
  step: StepView,
  live: LiveRun | undefined,
  level: number,
) {
  const start = ms(step.started_at) ?? live?.stepStarted.get(step.depth) ?? input.now;
  const endAt = ms(step.completed_at) ?? live?.stepCompleted.get(step.depth) ?? null;
  const going = endAt === null && !isTerminal(run.status);
  const marks = retryMarks(live, step.depth, null);
  const attempts = step.attempts ?? 1;
  const u = step.usage;
  rows.push({
    key: `step:${run.id}:${step.depth}`,
    kind: 'step',
    level,
    runId: run.id,
    label: `step ${step.depth}`,
    detail:
      `${step.model} · ${u ? `${u.prompt_tokens}+${u.completion_tokens} tok` : ''}` +
      (attempts > 1 ? ` · ${attempts} attempts` : ''),
    status: step.status,
    start,
    end: endAt ?? (going ? input.now : start),
    live: going,
    error: step.status === 'failed',
    waits: marks.length
      ? live!.retries
          .filter((r) => r.tool_call_id === null && r.depth === step.depth && r.retry_in_ms !== null)
          .map((r) => ({ start: r.at, end: Math.min(r.at + r.retry_in_ms!, endAt ?? input.now), label: 'retry wait' }))
      : [],
    marks,
    estimated: !step.started_at,
  });
}

function addCall(
  rows: Row[],
  input: TimelineInput,
  run: RunView,
  step: StepView,
  call: CallView,
  live: LiveRun | undefined,
  level: number,
) {
  const ev = live?.calls.get(call.id);
  const stepEnd = ms(step.completed_at) ?? input.now;
  const waits: Row['waits'] = [];
  const approvalAt = ms(call.approval?.at);
  let start = ms(call.started_at) ?? ev?.started ?? null;
  let end = ms(call.completed_at) ?? ev?.completed ?? null;
  const done = !['queued', 'running', 'requires_action'].includes(call.status);
  const estimated = !call.started_at;
  // A call that waited for an answer: from its step's end until the decision (or now).
  if (call.approval) {
    const waitEnd = approvalAt ?? (call.approval.decision === 'pending' ? input.now : (start ?? stepEnd));
    waits.push({ start: stepEnd, end: waitEnd, label: `waiting (${call.approval.type}): ${call.approval.decision}` });
    start ??= stepEnd;
  }
  if (start === null) start = stepEnd;
  if (end === null) {
    if (done && call.duration_ms !== null) end = (approvalAt ?? start) + call.duration_ms;
    else if (done) end = start;
    else end = isTerminal(run.status) ? start : input.now;
  }
  if (end < start) end = start;
  const attempts = call.attempts ?? 0;
  rows.push({
    key: `call:${run.id}:${call.id}`,
    kind: 'call',
    level,
    runId: run.id,
    label: call.name,
    detail:
      (call.duration_ms !== null ? `${Math.round(call.duration_ms)} ms` : call.status) +
      (attempts > 1 ? ` · ${attempts} attempts` : '') +
      (SUBRUN_TOOLS.has(call.name) && call.subrun_ids?.length ? ` · ${call.subrun_ids.length} sub-run(s)` : ''),
    status: call.status,
    start,
    end,
    live: !done && !isTerminal(run.status),
    error: call.is_error || call.status === 'failed',
    waits,
    marks: retryMarks(live, step.depth, call.id),
    estimated,
    callId: call.id,
  });
}

/** The sub-runs of a run by the call that started them: from /steps once the call ended, else from the events. */
function subrunsByCall(data: RunData, live: LiveTree): Map<string, RunView[]> {
  const byId = new Map(data.children.map((c) => [c.id, c]));
  const out = new Map<string, RunView[]>();
  const seen = new Set<string>();
  const push = (callId: string, child: RunView) => {
    if (seen.has(child.id)) return;
    seen.add(child.id);
    const list = out.get(callId) ?? [];
    list.push(child);
    out.set(callId, list);
  };
  for (const step of data.steps)
    for (const call of step.tool_calls)
      for (const id of call.subrun_ids ?? []) {
        const child = byId.get(id);
        if (child) push(call.id, child);
      }
  for (const child of data.children) {
    const via = live.subrunCall.get(child.id);
    if (via) push(via.tool_call_id, child);
  }
  return out;
}

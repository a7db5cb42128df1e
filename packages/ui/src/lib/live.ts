// What a run's event stream tells beyond /steps: the step in flight and its streamed text, calls running, retries,
// waits, and which call started which sub-run. The stream of a root run carries its sub-runs' events too.

/** One event as the stream sends it: its type and the JSON of its data. */
export interface StreamEvent {
  type: string;
  data: Record<string, unknown> & { run_id?: string; at?: string };
}

export interface LiveCall {
  tool_call_id: string;
  name: string;
  depth: number;
  index: number;
  started: number;
  completed: number | null;
  attempt: number;
  is_error: boolean;
}

export interface LiveRetry {
  at: number;
  attempt: number | null;
  reason: string;
  retry_in_ms: number | null;
  depth: number | null;
  tool_call_id: string | null;
}

/** What the events of one run say. */
export interface LiveRun {
  /** depth → when its model call (its latest attempt) started. */
  stepStarted: Map<number, number>;
  /** depth → when its model call ended. */
  stepCompleted: Map<number, number>;
  /** depth → the model's text streamed so far, while its step is in flight. */
  streamed: Map<number, string>;
  calls: Map<string, LiveCall>;
  retries: LiveRetry[];
  /** action id → when it was asked and answered. */
  actions: Map<string, { required: number; resolved: number | null; decision: string | null }>;
  started: number | null;
  ended: number | null;
}

/** What the events of a run tree say: each run's, and the call that started each sub-run. */
export interface LiveTree {
  runs: Map<string, LiveRun>;
  /** sub-run id → the call of its parent that started it. */
  subrunCall: Map<string, { tool_call_id: string; index: number; started: number; completed: number | null }>;
  /** The terminal event of the run the stream follows came. */
  ended: boolean;
}

export const TERMINAL_EVENTS = new Set(['run.completed', 'run.failed', 'run.cancelled', 'run.incomplete']);

export function emptyTree(): LiveTree {
  return { runs: new Map(), subrunCall: new Map(), ended: false };
}

function runOf(tree: LiveTree, id: string): LiveRun {
  let r = tree.runs.get(id);
  if (!r) {
    r = {
      stepStarted: new Map(),
      stepCompleted: new Map(),
      streamed: new Map(),
      calls: new Map(),
      retries: [],
      actions: new Map(),
      started: null,
      ended: null,
    };
    tree.runs.set(id, r);
  }
  return r;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * Applies one event of the stream of `streamRun`. Returns what it changes: `data` when the REST views (/steps,
 * the run, its transcript) are worth reading again, `text` when only streamed text grew.
 */
export function applyEvent(tree: LiveTree, streamRun: string, ev: StreamEvent): 'data' | 'text' | 'none' {
  const d = ev.data;
  const runId = str(d.run_id) ?? streamRun;
  const at = d.at ? Date.parse(d.at) : Date.now();
  const depth = num(d.depth);
  switch (ev.type) {
    case 'run.started':
      runOf(tree, runId).started = at;
      return 'data';
    case 'step.started': {
      const r = runOf(tree, runId);
      if (depth === null) return 'none';
      r.stepStarted.set(depth, at);
      r.stepCompleted.delete(depth);
      r.streamed.set(depth, '');
      return 'data';
    }
    case 'message.delta': {
      const r = runOf(tree, runId);
      if (depth === null) return 'none';
      r.streamed.set(depth, (r.streamed.get(depth) ?? '') + (str(d.text) ?? ''));
      return 'text';
    }
    case 'step.completed': {
      const r = runOf(tree, runId);
      if (depth === null) return 'none';
      r.stepCompleted.set(depth, at);
      r.streamed.delete(depth);
      return 'data';
    }
    case 'step.retry': {
      runOf(tree, runId).retries.push({
        at,
        attempt: num(d.attempt),
        reason: str(d.reason) ?? (d.reason === undefined ? 'retry' : JSON.stringify(d.reason)),
        retry_in_ms: num(d.retry_in_ms),
        depth,
        tool_call_id: str(d.tool_call_id),
      });
      return 'data';
    }
    case 'tool.started': {
      const id = str(d.tool_call_id);
      if (!id) return 'none';
      const r = runOf(tree, runId);
      const attempt = num(d.attempt) ?? 1;
      const prev = r.calls.get(id);
      if (prev && attempt > prev.attempt) {
        r.retries.push({ at, attempt, reason: 'tried again', retry_in_ms: null, depth, tool_call_id: id });
      }
      r.calls.set(id, {
        tool_call_id: id,
        name: str(d.name) ?? '',
        depth: depth ?? 0,
        index: num(d.index) ?? 0,
        started: prev?.started ?? at,
        completed: null,
        attempt,
        is_error: false,
      });
      return 'data';
    }
    case 'tool.completed':
    case 'tool.cancelled': {
      const id = str(d.tool_call_id);
      if (!id) return 'none';
      const r = runOf(tree, runId);
      const prev = r.calls.get(id);
      const ms = num(d.duration_ms);
      r.calls.set(id, {
        tool_call_id: id,
        name: str(d.name) ?? prev?.name ?? '',
        depth: depth ?? prev?.depth ?? 0,
        index: num(d.index) ?? prev?.index ?? 0,
        started: prev?.started ?? (ms !== null ? at - ms : at),
        completed: at,
        attempt: prev?.attempt ?? 1,
        is_error: d.is_error === true || ev.type === 'tool.cancelled',
      });
      return 'data';
    }
    case 'subrun.started': {
      const call = str(d.tool_call_id);
      if (call)
        tree.subrunCall.set(runId, { tool_call_id: call, index: num(d.index) ?? 0, started: at, completed: null });
      return 'data';
    }
    case 'subrun.completed': {
      const s = tree.subrunCall.get(runId);
      if (s) s.completed = at;
      else {
        const call = str(d.tool_call_id);
        if (call)
          tree.subrunCall.set(runId, { tool_call_id: call, index: num(d.index) ?? 0, started: at, completed: at });
      }
      return 'data';
    }
    case 'action.required': {
      const items = Array.isArray(d.items) ? (d.items as Array<{ id?: unknown; run_id?: unknown }>) : [];
      for (const item of items) {
        const id = str(item.id);
        if (!id) continue;
        const r = runOf(tree, str(item.run_id) ?? runId);
        if (!r.actions.has(id)) r.actions.set(id, { required: at, resolved: null, decision: null });
      }
      return 'data';
    }
    case 'action.resolved': {
      const id = str(d.id);
      if (!id) return 'none';
      for (const r of tree.runs.values()) {
        const a = r.actions.get(id);
        if (a) {
          a.resolved = at;
          a.decision = str(d.decision);
        }
      }
      return 'data';
    }
    default:
      if (TERMINAL_EVENTS.has(ev.type)) {
        runOf(tree, runId).ended = at;
        if (runId === streamRun) tree.ended = true;
        return 'data';
      }
      return 'none';
  }
}

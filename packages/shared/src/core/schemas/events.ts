/** Event types of a run's event stream (the SSE `event:` field). */
export const RUN_EVENT_TYPES = [
  'run.queued',
  'run.started',
  'step.started',
  'message.delta',
  'step.completed',
  'tool.started',
  'tool.completed',
  'subrun.started',
  'subrun.completed',
  'action.required',
  'action.resolved',
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.incomplete',
] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set([
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.incomplete',
]);

/** One event as stored in the run's Redis Stream and sent over SSE. */
export interface RunEvent {
  id: string;
  type: RunEventType;
  data: Record<string, unknown>;
}

/**
 * How a tool call ended. Every kind but `ok` is an error result the model sees (tool failures
 * are data, never job failures):
 * - `ok`: the tool answered;
 * - `tool_error`: the tool answered with an error result (its own words reach the model);
 * - `server_error`: the tool's server answered the request with a protocol error;
 * - `subrun_failed`: a sub-agent run did not complete;
 * - `invalid_arguments`: the arguments are not JSON or do not fit the tool's input schema;
 * - `refused`: agentq did not run it (unknown tool, not allowed for the run, a limit, the
 *   deadline had passed before it started);
 * - `timeout`: no answer in time (the call's timeout, or abandoned at the run's deadline);
 * - `unavailable`: its server could not be reached, after the last attempt;
 * - `unknown_outcome`: an attempt may have had its effect and the tool is not idempotent, so it
 *   was not run again;
 * - `no_result`: the call's job ended without storing a result (the next step fills it in);
 * - `rejected`: a person said no to the call (approval), which never ran; the model reads
 *   `The user rejected this call: <reason>`.
 */
export const TOOL_OUTCOME_KINDS = [
  'ok',
  'tool_error',
  'server_error',
  'subrun_failed',
  'invalid_arguments',
  'refused',
  'timeout',
  'unavailable',
  'unknown_outcome',
  'no_result',
  'rejected',
] as const;
export type ToolOutcomeKind = (typeof TOOL_OUTCOME_KINDS)[number];

/** A tool call's outcome: its kind and its text (the tool's answer, or why it failed). */
export interface ToolOutcome {
  kind: ToolOutcomeKind;
  text: string;
}

export const toolOk = (text: string): ToolOutcome => ({ kind: 'ok', text });
export const toolFailed = (kind: Exclude<ToolOutcomeKind, 'ok'>, text: string): ToolOutcome => ({ kind, text });

/** A call a person rejected; `reason` is theirs. */
export const toolRejected = (reason: string | undefined): ToolOutcome => ({
  kind: 'rejected',
  text: reason?.trim() ? reason.trim() : 'no reason given',
});

/**
 * The text the model sees for an outcome, the one place it is worded: what the tool answered
 * (also an error result, in the tool's own words), `The user rejected this call: <reason>` for a
 * rejection, else `Error executing <tool>: <why>` (the seeds' wording).
 */
export function modelText(tool: string, outcome: ToolOutcome): string {
  if (outcome.kind === 'ok' || outcome.kind === 'tool_error') return outcome.text;
  if (outcome.kind === 'rejected') return `The user rejected this call: ${outcome.text}`;
  return `Error executing ${tool}: ${outcome.text}`;
}

import type { ActionItemView } from '../core/schemas/run.js';

/** What a request waits for: a yes to a tool call, a client tool's output, an answer to a question. */
export type ActionType = ActionItemView['type'];

/**
 * A request for an answer as stored, fixed when it is made: what the API shows of it, plus the
 * one tool call of one step it is about (the arguments recorded are the ones an approval runs)
 * and what to do if nobody answers.
 */
export interface ActionRecord extends Omit<ActionItemView, 'respond_url'> {
  depth: number;
  index: number;
  /** What an expired request comes to: the model is told (`reject`) or the run ends (`stop`). */
  on_timeout: 'reject' | 'stop';
}

/** How a request was settled; the first decision stored is the only one. */
export type ActionDecisionKind = 'approved' | 'rejected' | 'answered' | 'expired' | 'cancelled';

export interface ActionDecision {
  decision: ActionDecisionKind;
  /** An approval's edited arguments (checked against the tool's input schema). */
  arguments?: string;
  /** Why a call was rejected. */
  reason?: string;
  /** A client tool's output, or the answer to a question. */
  output?: string;
  /** Who decided: the tenant (its name), `link` (a signed link), or `agentq` (expiry, cancel). */
  by: string;
  at: string;
}

/** The API's view of a request. */
export function actionView(r: ActionRecord): ActionItemView {
  return {
    id: r.id,
    type: r.type,
    run_id: r.run_id,
    tool_call_id: r.tool_call_id,
    name: r.name,
    arguments: r.arguments,
    ...(r.type === 'input' ? { question: r.question ?? '', choices: r.choices ?? null } : {}),
    created_at: r.created_at,
    expires_at: r.expires_at,
  };
}

/** `act_<run id without "run_">_<depth>_<index>`: an action id names one tool call of one step of one run. */
const ACTION_ID = /^act_([0-9a-z]{21})_(\d{1,3})_(\d{1,3})$/;

export function actionId(runId: string, depth: number, index: number): string {
  return `act_${runId.slice('run_'.length)}_${depth}_${index}`;
}

/** The tool call an action id names, or null for a string that is not one. */
export function parseActionId(id: string): { runId: string; depth: number; index: number } | null {
  const m = ACTION_ID.exec(id);
  return m ? { runId: `run_${m[1]}`, depth: Number(m[2]), index: Number(m[3]) } : null;
}

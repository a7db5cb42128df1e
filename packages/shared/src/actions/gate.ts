import { compileAllowlist } from '../core/allowlist.js';
import { ASK_HUMAN_TOOL, BUILTIN_TOOL_NAMES } from '../core/builtin-tools.js';
import type { ToolCall } from '../core/schemas/message.js';
import { runDeadline, type RunSpec } from '../core/schemas/run.js';
import type { ToolCatalogEntry } from '../store/tool-catalog.js';
import { actionId, type ActionRecord, type ActionType } from './action-record.js';

/** The run a round belongs to, as the gate needs it. */
export interface GatedRun {
  id: string;
  spec: RunSpec;
  createdAt: string;
}

/**
 * What a tool call waits for before it runs, or null when it runs at once:
 * - `client_tool`: a tool of the caller's `client_tools` (a root run's own);
 * - `input`: `ask_human`, when the run takes questions to the user and the question is readable
 *   (else the call runs and fails, telling the model why);
 * - `approval`: a call the run's approval policy names (a glob of `tools`), or any call but a
 *   built-in tool's under `destructive`, unless the tool is known to be read-only. A tool the
 *   catalog does not know is taken for destructive, as MCP's defaults say.
 */
export function gateOf(name: string, args: string, spec: RunSpec, catalog: ToolCatalogEntry[]): ActionType | null {
  if (spec.client_tools?.some((t) => t.function.name === name)) return 'client_tool';
  if (name === ASK_HUMAN_TOOL.name) return spec.human_input && questionOf(args) ? 'input' : null;
  const policy = spec.approval;
  if (!policy) return null;
  if (policy.tools?.length && compileAllowlist(policy.tools)(name)) return 'approval';
  if (policy.destructive && !BUILTIN_TOOL_NAMES.has(name)) {
    const tool = catalog.find((t) => t.name === name);
    if (tool?.annotations?.readOnlyHint !== true) return 'approval';
  }
  return null;
}

/** The question of an `ask_human` call, or null when its arguments are not one. */
export function questionOf(args: string): { question: string; choices: string[] | null } | null {
  let v: unknown;
  try {
    v = JSON.parse(args);
  } catch {
    return null;
  }
  if (!v || typeof v !== 'object') return null;
  const { question, choices } = v as { question?: unknown; choices?: unknown };
  if (typeof question !== 'string' || !question.trim() || question.length > 4000) return null;
  if (choices === undefined || choices === null) return { question, choices: null };
  if (!Array.isArray(choices) || choices.length > 20 || !choices.every((c) => typeof c === 'string' && c.length <= 200))
    return null;
  return { question, choices: choices as string[] };
}

/**
 * The requests a round's calls make (calls that need nothing get none), each expiring at the
 * earlier of the policy's `timeout_ms` and the run's deadline.
 */
export function requestsOf(
  run: GatedRun,
  depth: number,
  calls: ToolCall[],
  catalog: ToolCatalogEntry[],
  now = Date.now(),
): Array<ActionRecord | null> {
  const deadline = runDeadline(run.spec, Date.parse(run.createdAt));
  const timeout = run.spec.approval?.timeout_ms;
  const expiresMs = Math.min(timeout !== undefined ? now + timeout : Infinity, deadline ?? Infinity);
  return calls.map((tc, index) => {
    const type = gateOf(tc.function.name, tc.function.arguments, run.spec, catalog);
    if (!type) return null;
    const q = type === 'input' ? questionOf(tc.function.arguments) : null;
    return {
      id: actionId(run.id, depth, index),
      type,
      run_id: run.id,
      depth,
      index,
      tool_call_id: tc.id,
      name: tc.function.name,
      arguments: tc.function.arguments,
      ...(q ? { question: q.question, choices: q.choices } : {}),
      created_at: new Date(now).toISOString(),
      expires_at: Number.isFinite(expiresMs) ? new Date(expiresMs).toISOString() : null,
      on_timeout: run.spec.approval?.on_timeout ?? 'reject',
    };
  });
}

import { InvalidRequestError } from '../core/errors.js';
import type { ChatMessage } from '../core/schemas/message.js';
import type { CreateRunBody, RunSpec } from '../core/schemas/run.js';
import type { ContextDoc } from '../store/context-store.js';
import type { RunState } from '../store/run-hash.js';

/** A new run before it is stored: its fixed spec, first messages and context. */
export interface RunPlan {
  spec: RunSpec;
  messages: ChatMessage[];
  context?: ContextDoc[];
}

/** The spec, first messages and context of a new root run, from a `POST /v1/runs` body. */
export function buildRun(body: CreateRunBody, defaultModel: string | undefined, now = Date.now()): RunPlan {
  const model = body.model ?? defaultModel;
  if (!model) {
    throw new InvalidRequestError(
      'model: no model given and the service has no default (set "model" in the request or MODEL on the server)',
      [{ field: 'model', message: 'required when MODEL is not set' }],
    );
  }
  const messages: ChatMessage[] = [];
  if (body.instructions) messages.push({ role: 'system', content: body.instructions });
  if (body.input !== undefined) messages.push({ role: 'user', content: body.input });
  else messages.push(...(body.messages ?? []));
  const spec: RunSpec = {
    model,
    ...(body.model_settings ? { model_settings: body.model_settings } : {}),
    ...(body.fallback_models ? { fallback_models: body.fallback_models } : {}),
    ...(body.instructions !== undefined ? { instructions: body.instructions } : {}),
    ...(body.tools ? { tools: body.tools } : {}),
    ...(body.tool_limits ? { tool_limits: body.tool_limits } : {}),
    max_depth: body.max_depth,
    ...(body.max_total_tokens !== undefined ? { max_total_tokens: body.max_total_tokens } : {}),
    ...(body.max_cost_usd !== undefined ? { max_cost_usd: body.max_cost_usd } : {}),
    ...(body.timeout_ms !== undefined ? { timeout_ms: body.timeout_ms, deadline_at: now + body.timeout_ms } : {}),
    on_budget_exhausted: body.on_budget_exhausted,
    ...(body.subagents ? { subagents: body.subagents } : {}),
    ...(body.response_format ? { response_format: body.response_format } : {}),
    ...(body.structured_output_retries !== undefined
      ? { structured_output_retries: body.structured_output_retries }
      : {}),
    ...(body.webhook ? { webhook: body.webhook } : {}),
    ...(body.approval ? { approval: body.approval } : {}),
    ...(body.client_tools ? { client_tools: body.client_tools } : {}),
    ...(body.human_input ? { human_input: true } : {}),
    ...(body.context !== undefined ? { has_context: true } : {}),
    metadata: body.metadata ?? {},
    ancestors: [],
    nesting: 0,
  };
  const context =
    body.context === undefined
      ? undefined
      : typeof body.context === 'string'
        ? [{ name: 'context', text: body.context }]
        : body.context;
  if (context) {
    const names = new Set<string>();
    for (const d of context) {
      if (names.has(d.name))
        throw new InvalidRequestError(`context: two documents are named "${d.name}"; names must be unique`, [
          { field: 'context', message: 'duplicate document name' },
        ]);
      names.add(d.name);
    }
  }
  return { spec, messages, ...(context ? { context } : {}) };
}

/**
 * The spec of a sub-run started by `parent`'s tool call `parentCall`: it inherits the model,
 * tools, budgets (the token budget is the tree's, the deadline the root's), sub-agent limits,
 * the approval policy and questions to the user (not the caller's client tools), nothing of the
 * parent's messages, and wakes the job of the call that waits for it when it ends.
 */
export function childSpec(parent: RunState, parentCall: { depth: number; index: number }): RunSpec {
  const p = parent.spec;
  return {
    model: p.model,
    ...(p.model_settings ? { model_settings: p.model_settings } : {}),
    ...(p.fallback_models ? { fallback_models: p.fallback_models } : {}),
    ...(p.tools ? { tools: p.tools } : {}),
    ...(p.tool_limits ? { tool_limits: p.tool_limits } : {}),
    max_depth: p.max_depth,
    ...(p.max_total_tokens !== undefined ? { max_total_tokens: p.max_total_tokens } : {}),
    ...(p.max_cost_usd !== undefined ? { max_cost_usd: p.max_cost_usd } : {}),
    ...(p.deadline_at !== undefined ? { deadline_at: p.deadline_at } : {}),
    on_budget_exhausted: p.on_budget_exhausted,
    ...(p.subagents ? { subagents: p.subagents } : {}),
    ...(p.subagent_types ? { subagent_types: p.subagent_types } : {}),
    ...(p.approval ? { approval: p.approval } : {}),
    ...(p.human_input ? { human_input: true } : {}),
    ...(p.webhook || p.root_webhook ? { root_webhook: true } : {}),
    metadata: {},
    ancestors: [...p.ancestors, parent.id],
    nesting: p.nesting + 1,
    parent_call: parentCall,
  };
}

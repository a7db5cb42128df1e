import type { AgentRecord } from '../core/schemas/agent.js';
import type { RunSpec } from '../core/schemas/run.js';
import type { RunState } from '../store/run-hash.js';

/** The most sub-agent nesting any run may have (the schema's bound of `max_nesting`). */
const MAX_NESTING = 10;

/**
 * The spec of a sub-run started as the saved agent `agent` by `parent`'s tool call
 * `parentCall`: it takes the agent's model, settings, tools, budgets, response format and
 * sub-agent settings, within what the tree has left: the tree's token budget holds as the
 * parent's does (the agent's own `max_total_tokens` bounds this sub-run and those below it),
 * the deadline is the earlier of the root's and the agent's `timeout_ms` from now, and its
 * sub-agents may nest no deeper than the parent's allow (so agents that call each other stop
 * there). The approval policy is the parent's if it has one (a sub-agent does not escape the
 * tree's), else the agent's; questions to the user are allowed if either allows them; the
 * caller's client tools are never a sub-run's.
 */
export function agentChildSpec(
  parent: RunState,
  parentCall: { depth: number; index: number },
  agent: AgentRecord,
  subagentTypes: RunSpec['subagent_types'],
  now = Date.now(),
): RunSpec {
  const p = parent.spec;
  const ownDeadline = agent.timeout_ms !== undefined ? now + agent.timeout_ms : undefined;
  const deadline =
    p.deadline_at !== undefined && ownDeadline !== undefined
      ? Math.min(p.deadline_at, ownDeadline)
      : (p.deadline_at ?? ownDeadline);
  const sub = agent.subagents;
  const parentNesting = p.subagents?.max_nesting ?? MAX_NESTING;
  return {
    model: agent.model ?? p.model,
    ...(agent.model_settings ? { model_settings: agent.model_settings } : {}),
    ...(agent.fallback_models ? { fallback_models: agent.fallback_models } : {}),
    ...(agent.instructions !== undefined ? { instructions: agent.instructions } : {}),
    ...(agent.tools ? { tools: agent.tools } : {}),
    ...(agent.tool_limits ? { tool_limits: agent.tool_limits } : {}),
    max_depth: agent.max_depth,
    ...(p.max_total_tokens !== undefined ? { max_total_tokens: p.max_total_tokens } : {}),
    ...(agent.max_total_tokens !== undefined ? { subtree_max_total_tokens: agent.max_total_tokens } : {}),
    ...(p.max_cost_usd !== undefined ? { max_cost_usd: p.max_cost_usd } : {}),
    ...(agent.max_cost_usd !== undefined ? { subtree_max_cost_usd: agent.max_cost_usd } : {}),
    ...(deadline !== undefined ? { deadline_at: deadline } : {}),
    on_budget_exhausted: agent.on_budget_exhausted,
    ...(sub ? { subagents: { ...sub, max_nesting: Math.min(sub.max_nesting, parentNesting) } } : {}),
    ...(subagentTypes?.length ? { subagent_types: subagentTypes } : {}),
    ...(agent.response_format ? { response_format: agent.response_format } : {}),
    ...(agent.structured_output_retries !== undefined
      ? { structured_output_retries: agent.structured_output_retries }
      : {}),
    ...((p.approval ?? agent.approval) ? { approval: p.approval ?? agent.approval } : {}),
    ...(p.human_input || agent.human_input ? { human_input: true } : {}),
    ...(p.webhook || p.root_webhook ? { root_webhook: true } : {}),
    agent: { name: agent.name, version: agent.version },
    metadata: agent.metadata ?? {},
    ancestors: [...p.ancestors, parent.id],
    nesting: p.nesting + 1,
    parent_call: parentCall,
  };
}

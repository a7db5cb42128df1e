import type { CreateRunRequest } from './types.js';

/** The fields of a run that a saved agent defines: a run that names the agent takes those it does not give. */
export type AgentFields = Pick<
  CreateRunRequest,
  | 'instructions'
  | 'model'
  | 'model_settings'
  | 'fallback_models'
  | 'tools'
  | 'tool_limits'
  | 'max_depth'
  | 'max_total_tokens'
  | 'max_cost_usd'
  | 'timeout_ms'
  | 'on_budget_exhausted'
  | 'response_format'
  | 'structured_output_retries'
  | 'subagents'
  | 'approval'
  | 'client_tools'
  | 'human_input'
  | 'metadata'
>;

/** What `PUT /v1/agents/:name` takes (and, with `name`, `POST /v1/agents`). */
export interface AgentDefinition extends AgentFields {
  /** What the agent is for: the model reads it when it chooses a sub-agent. */
  description?: string;
}

/** A saved agent at one version: every field named, null where it has none. */
export type Agent = { [K in keyof AgentDefinition]-?: NonNullable<AgentDefinition[K]> | null } & {
  object: 'agent';
  name: string;
  version: number;
  created_at: string;
  /** On a write: what may not work yet (an agent of `subagents.agents` not saved). */
  warnings?: string[];
};

/** A page of agents (or of one agent's versions, newest first). */
export interface AgentList {
  data: Agent[];
  /** The `after` of the next page, or null on the last. */
  next: string | null;
}

export interface ListAgentsParams {
  /** Page size, 1..100. @defaultValue 100 */
  limit?: number;
  /** An agent name (for versions: a version number): the `next` of the previous page. */
  after?: string;
}

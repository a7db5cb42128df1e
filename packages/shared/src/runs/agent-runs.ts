import { AGENT_RUN_FIELDS, parseAgentRef, type AgentDefinition, type AgentRecord } from '../core/schemas/agent.js';
import type { AgentRef, CreateRunBody, RunSpec, SubagentType } from '../core/schemas/run.js';
import type { AgentStore } from '../store/agents.js';

/** Fields whose objects are merged key by key (the request's keys win), not replaced whole. */
const MERGED_FIELDS = new Set<string>(['model_settings', 'metadata']);

/**
 * The body of a run that names a saved agent: every field of the agent's that the request does
 * not give (`given`: the request's own keys, before defaults) is the agent's; a field given in
 * the request replaces the agent's whole, but `model_settings` and `metadata`, whose keys are
 * merged (the request's win).
 */
export function withAgent(body: CreateRunBody, given: ReadonlySet<string>, agent: AgentRecord): CreateRunBody {
  const out: Record<string, unknown> = { ...body };
  const from = agent as Record<string, unknown>;
  for (const field of AGENT_RUN_FIELDS) {
    const value = from[field];
    if (value === undefined || value === null) continue;
    if (!given.has(field)) out[field] = value;
    else if (MERGED_FIELDS.has(field) && typeof value === 'object')
      out[field] = { ...(value as object), ...(out[field] as object) };
  }
  delete out.agent;
  return out as CreateRunBody;
}

/** What resolving a run's agent came to: the body to build the run from, or the reference that names nothing. */
export type AgentResolution = { body: CreateRunBody; agent?: AgentRef } | { notFound: string };

/** The run's body with its agent's fields (see withAgent), read at the version named or the latest. */
export async function resolveRunAgent(
  agents: AgentStore,
  tenant: string,
  body: CreateRunBody,
  given: ReadonlySet<string>,
): Promise<AgentResolution> {
  if (body.agent === undefined) return { body };
  const ref = parseAgentRef(body.agent);
  const record = await agents.get(tenant, ref.name, ref.version);
  if (!record) return { notFound: body.agent };
  return { body: withAgent(body, given, record), agent: { name: record.name, version: record.version } };
}

/** The description the model reads of an agent that is not saved (yet). */
const UNSAVED = '(no agent of this name is saved yet: a call to it fails)';

/**
 * The agents a run's model may start as sub-agents, each at the version named in
 * `subagents.agents` or else at its latest now, with its description: a later version of an
 * agent does not change a run made before it. An agent not saved yet is listed without a version.
 */
export async function subagentTypes(agents: AgentStore, tenant: string, refs: string[]): Promise<SubagentType[]> {
  const parsed = refs.map(parseAgentRef);
  const records = await agents.getMany(tenant, parsed);
  return parsed.map((r, i) => {
    const rec = records[i];
    return rec
      ? { name: rec.name, version: rec.version, description: rec.description ?? '' }
      : { name: r.name, version: r.version ?? null, description: UNSAVED };
  });
}

/** Fixes the run's sub-agent types (see subagentTypes) in its spec, when it lists any. */
export async function pinSubagentTypes(agents: AgentStore, tenant: string, spec: RunSpec): Promise<void> {
  const refs = spec.subagents?.agents;
  if (refs?.length) spec.subagent_types = await subagentTypes(agents, tenant, refs);
}

/** Warnings for an agent being saved: the agents it may call that are not saved (yet). */
export async function agentWarnings(agents: AgentStore, tenant: string, def: AgentDefinition): Promise<string[]> {
  const refs = def.subagents?.agents ?? [];
  if (!refs.length) return [];
  const records = await agents.getMany(tenant, refs.map(parseAgentRef));
  return refs.flatMap((ref, i) =>
    records[i] ? [] : [`subagents.agents: no agent "${ref}" is saved yet; a call to it is an error result until it is`],
  );
}

import type { AgentRecord, RunSpec } from '@agentq/shared/core';
import type { RunState, RunStore } from '@agentq/shared/store';
import { agentChildSpec, subagentTypes } from '@agentq/shared/runs';

/**
 * The saved agent each prompt item names (undefined for one that names none), read at the
 * version the run fixed when it was made (or, for an agent not saved then, its latest now); or
 * the error text the model reads: an agent the run may not start, or one that is not saved.
 */
export async function itemAgents(
  names: Array<string | undefined>,
  run: RunState,
  store: RunStore,
): Promise<Array<AgentRecord | undefined> | string> {
  const types = run.spec.subagent_types ?? [];
  const allowed = types.map((t) => t.name);
  const out: Array<AgentRecord | undefined> = [];
  const cache = new Map<string, AgentRecord | null>();
  for (const name of names) {
    if (name === undefined) {
      out.push(undefined);
      continue;
    }
    const type = types.find((t) => t.name === name);
    if (!type)
      return allowed.length
        ? `this run may not start the agent "${name}" (it may start: ${allowed.join(', ')})`
        : `this run may not start saved agents (none is listed in its subagents.agents); leave "agent" out`;
    if (!cache.has(name)) cache.set(name, await store.agents.get(run.tenant, name, type.version ?? undefined));
    const record = cache.get(name);
    if (!record)
      return type.version === null
        ? `no agent "${name}" is saved (yet); answer this part yourself or use another agent`
        : `the agent "${name}" at version ${type.version} no longer exists (it was deleted)`;
    out.push(record);
  }
  return out;
}

/**
 * A saved agent's sub-run: its first messages (the agent's instructions, the call's own if it
 * gave any, then `user`) and its spec (see agentChildSpec), the agents it may start in turn fixed
 * at their versions now.
 */
export async function agentChild(
  agent: AgentRecord,
  call: { instructions?: string; user: string },
  run: RunState,
  parentCall: { depth: number; index: number },
  store: RunStore,
): Promise<{ messages: Array<{ role: 'system' | 'user'; content: string }>; spec: RunSpec }> {
  const refs = agent.subagents?.enabled ? (agent.subagents.agents ?? []) : [];
  const types = refs.length ? await subagentTypes(store.agents, run.tenant, refs) : undefined;
  const messages: Array<{ role: 'system' | 'user'; content: string }> = [];
  if (agent.instructions) messages.push({ role: 'system', content: agent.instructions });
  if (call.instructions) messages.push({ role: 'system', content: call.instructions });
  messages.push({ role: 'user', content: call.user });
  return { messages, spec: agentChildSpec(run, parentCall, agent, types) };
}

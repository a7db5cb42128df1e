import type { BuiltinTool } from './builtin-tools.js';
import type { SubagentType } from './schemas/run.js';

/** The most of an agent's description the sub-agent tools show the model. */
const DESCRIPTION_SHOWN_CHARS = 1000;

const made = new WeakMap<readonly SubagentType[], BuiltinTool[]>();

/**
 * `agent_query` and `agent_query_batch` for a run that may start saved agents: each prompt item
 * takes `agent`, one of the names the run lists (an enum), and the schema and the tool's
 * description say what each agent is for, so that the model can choose. Made once per list.
 */
export function typedSubagentTools(base: readonly BuiltinTool[], types: readonly SubagentType[]): BuiltinTool[] {
  const known = made.get(types);
  if (known) return known;
  const catalog = types
    .map((t) => `- ${t.name}: ${t.description.slice(0, DESCRIPTION_SHOWN_CHARS) || '(no description)'}`)
    .join('\n');
  const agent = {
    type: 'string',
    enum: types.map((t) => t.name),
    description:
      'Optional: the saved agent that does the subtask, with its own instructions, model and tools. ' +
      `Without it, a general sub-agent does it. The agents:\n${catalog}`,
  };
  const withAgent = (schema: Record<string, unknown>): Record<string, unknown> => {
    const s = structuredClone(schema) as { properties: Record<string, unknown> } & Record<string, unknown>;
    s.properties.agent = agent;
    return s;
  };
  const tools = base.map((t) => {
    if (t.name === 'agent_query')
      return {
        ...t,
        description: `${t.description} Give "agent" to hand it to one of these saved agents:\n${catalog}`,
        parameters: withAgent(t.parameters),
      };
    // agent_query_batch: each prompt given as an object may name its agent.
    const p = structuredClone(t.parameters) as {
      properties: { prompts: { items: { anyOf: Array<Record<string, unknown>> } } };
    } & Record<string, unknown>;
    p.properties.prompts.items.anyOf = p.properties.prompts.items.anyOf.map((s) =>
      s.type === 'object' ? withAgent(s) : s,
    );
    return {
      ...t,
      description: `${t.description} A prompt given as an object may name the saved agent that answers it ("agent").`,
      parameters: p,
    };
  });
  made.set(types, tools);
  return tools;
}

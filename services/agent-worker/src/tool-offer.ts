import { builtinToolsFor, compileAllowlist, type RunSpec } from '@agentq/shared/core';
import { type ToolCatalogEntry } from '@agentq/shared/store';

/**
 * The tools a run may use, in the OpenAI `tools` request format: the MCP tools its allowlist
 * admits, the built-in tools its options switch on (sub-agents, context, ask_human), and the
 * caller's client tools (a root run's; the allowlist does not apply to them).
 */
export function offeredTools(
  catalog: ToolCatalogEntry[],
  spec: Pick<RunSpec, 'tools' | 'subagents' | 'has_context' | 'human_input' | 'client_tools' | 'subagent_types'>,
) {
  const allowed = compileAllowlist(spec.tools);
  const mcp = catalog
    .filter((t) => allowed(t.name))
    .map((t) => ({
      type: 'function' as const,
      function: { name: t.name, description: t.description.slice(0, 1024), parameters: t.input_schema },
    }));
  const builtins = builtinToolsFor(spec).map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
  const client = (spec.client_tools ?? []).map((t) => ({
    type: 'function' as const,
    function: {
      name: t.function.name,
      description: t.function.description ?? '',
      parameters: t.function.parameters ?? { type: 'object', properties: {} },
    },
  }));
  return [...builtins, ...mcp, ...client];
}

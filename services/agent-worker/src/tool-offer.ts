import { compileAllowlist, type ToolCatalogEntry } from '@agentq/shared';

/** The tools a run may use, in the OpenAI `tools` request format. */
export function offeredTools(catalog: ToolCatalogEntry[], allowlist: string[] | undefined) {
  const allowed = compileAllowlist(allowlist);
  return catalog
    .filter((t) => allowed(t.name))
    .map((t) => ({
      type: 'function' as const,
      function: { name: t.name, description: t.description.slice(0, 1024), parameters: t.input_schema },
    }));
}

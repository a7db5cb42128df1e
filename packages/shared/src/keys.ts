/**
 * Redis keys of one deployment. A run's keys share the hash tag `{runId}` so that they sit on
 * one Redis Cluster slot and its Lua scripts may touch them together.
 */
export function runKeys(prefix: string, runId: string) {
  const base = `${prefix}:r:{${runId}}`;
  return {
    run: `${base}:run`,
    messages: `${base}:messages`,
    steps: `${base}:steps`,
    events: `${base}:events`,
    children: `${base}:children`,
    context: `${base}:context`,
    tools: (depth: number) => `${base}:tools:${depth}`,
  };
}
export type RunKeys = ReturnType<typeof runKeys>;

export function globalKeys(prefix: string) {
  return {
    /** Sorted set (all scores 0, ordered by member) of `<runId>` per owner: the listing index. */
    runIndex: (owner: string) => `${prefix}:runs:${owner}`,
    /** The tool catalog published by tool-workers. */
    toolCatalog: `${prefix}:tool-catalog`,
    idempotency: (owner: string, key: string) => `${prefix}:idem:${owner}:${key}`,
    webhookDeliveries: (runId: string) => `${prefix}:r:{${runId}}:webhook-deliveries`,
  };
}

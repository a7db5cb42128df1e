import { Hono } from 'hono';
import type { RunStore } from '@agentq/shared/store';

/** `/v1/tools`: the tools tool-workers have published, as `<server>__<tool>`. */
export function toolsRoutes(deps: { store: RunStore }) {
  const app = new Hono();
  app.get('/', async (c) => {
    const tools = await deps.store.catalog.get();
    return c.json({
      data: tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.input_schema,
        server: t.server,
      })),
    });
  });
  return app;
}

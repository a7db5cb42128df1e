import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';

export const DASHBOARD_PATH = '/admin/queues';

/**
 * The Bull Board dashboard over every agentq queue, as a Hono sub-app. Read-only: it is behind
 * the API keys, but it shows every tenant's jobs, so no key may retry, clean or remove them.
 */
export function dashboard(queues: Queue[]) {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode: true })),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'agentq' } },
  });
  return adapter.registerPlugin();
}

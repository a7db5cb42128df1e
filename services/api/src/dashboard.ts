import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { HonoAdapter } from '@bull-board/hono';
import { serveStatic } from '@hono/node-server/serve-static';
import type { Queue } from 'bullmq';

export const DASHBOARD_PATH = '/admin/queues';

/** The Bull Board dashboard over every agentq queue, as a Hono sub-app. */
export function dashboard(queues: Queue[]) {
  const adapter = new HonoAdapter(serveStatic);
  adapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q, { readOnlyMode: false })),
    serverAdapter: adapter,
    options: { uiConfig: { boardTitle: 'agentq' } },
  });
  return adapter.registerPlugin();
}

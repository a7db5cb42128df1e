import { Hono } from 'hono';
import { runCountsQuerySchema } from '@agentq/shared/core';
import type { RunStore } from '@agentq/shared/store';
import { parseOr400 } from '../validation.js';

type Env = { Variables: { tenant: string } };

/** How long a key's counts are reused (every open run list asks for them every few seconds). */
const FRESH_MS = 1000;
/** Counts kept at once (one per key and filter), the oldest dropped first. */
const MAX_KEPT = 1000;

/**
 * `GET /v1/runs/counts`: how many of the key's runs are in each status (of its newest 10,000; `complete` false past
 * them), `top_level=true` for runs that are no sub-run. Mounted before `/v1/runs/:id`.
 */
export function runCountsRoutes(deps: { store: RunStore }) {
  const app = new Hono<Env>();
  const kept = new Map<string, { at: number; value: Promise<unknown> }>();
  app.get('/counts', async (c) => {
    const q = parseOr400(runCountsQuerySchema, c.req.query(), 'query');
    const topLevel = q.top_level === 'true';
    const key = `${c.get('tenant')}\n${topLevel}`;
    const now = Date.now();
    let entry = kept.get(key);
    if (!entry || now - entry.at > FRESH_MS) {
      entry = { at: now, value: deps.store.runs.counts(c.get('tenant'), { topLevel }) };
      kept.delete(key);
      kept.set(key, entry);
      if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
      // A failed count is not kept.
      entry.value.catch(() => kept.delete(key));
    }
    return c.json(await entry.value);
  });
  return app;
}

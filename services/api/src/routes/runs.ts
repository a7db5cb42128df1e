import { Hono } from 'hono';
import { z } from 'zod';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  cancelChannel,
  ContextStore,
  createRunBodySchema,
  finishRun,
  isRunId,
  isTerminal,
  jobIds,
  jobNames,
  jobOptions,
  listRunsQuerySchema,
  newId,
  refuseNonPublicUrl,
  inTrace,
  startRunTrace,
  RUN_STATUSES,
  type AgentTurnJob,
  type Logger,
  type RunObject,
  type RunStore,
} from '@agentq/shared';
import { HttpError } from '../http-error.js';
import { claimIdempotencyKey } from '../idempotency.js';
import { buildRun, checkSizes, type RunLimits } from '../run-request.js';
import { parseOr400, readJson } from '../validation.js';

export interface RunsRouteDeps {
  store: RunStore;
  redis: Redis;
  agentQueue: Queue;
  webhookQueue: Queue;
  logger: Logger;
  limits: RunLimits;
  defaultModel?: string;
  webhookSecret?: string;
  webhookAllowPrivate: boolean;
}

/** A run of `owner`, or a 404: a run of another owner is never revealed (no 403). */
export async function ownRun(store: RunStore, owner: string, id: string): Promise<RunObject> {
  if (!isRunId(id)) throw new HttpError(404, 'not_found', `no run with id "${id.slice(0, 100)}"`);
  const run = await store.getOwnRun(id, owner);
  if (!run) throw new HttpError(404, 'not_found', `no run with id "${id}"`);
  return run;
}

type Env = { Variables: { owner: string } };


/** `/v1/runs`: create, list, read. */
export function runsRoutes(deps: RunsRouteDeps) {
  const app = new Hono<Env>();

  const own = (owner: string, id: string) => ownRun(deps.store, owner, id);

  app.post('/', async (c) => {
    const raw = await readJson(c.req);
    const body = parseOr400(createRunBodySchema, raw, 'run request');
    checkSizes(body, deps.limits);
    const { spec, messages, context } = buildRun(body, deps.defaultModel);
    if (spec.webhook) await checkWebhook(spec.webhook);
    const owner = c.get('owner');
    const id = newId('run');

    const idemKey = c.req.header('idempotency-key');
    let release: (() => Promise<void>) | undefined;
    if (idemKey !== undefined) {
      const claim = await claimIdempotencyKey(deps.redis, deps.store.global.idempotency, owner, idemKey, raw, id);
      if (claim.kind === 'replay') return c.json(await awaitRun(claim.runId), 200, { location: `/v1/runs/${claim.runId}` });
      release = claim.release;
    }

    const job: AgentTurnJob = { runId: id, depth: 0, ...startRunTrace(id, spec.model) };
    let created: RunObject;
    try {
      created = await deps.store.createRun({ id, owner, spec, messages });
      if (context) await new ContextStore(deps.redis, deps.store.prefix).put(id, context);
      await inTrace(job, () => deps.agentQueue.add(jobNames.agentTurn(id, 0), job, { ...jobOptions.agentTurn, jobId: jobIds.agentTurn(id, 0) }));
    } catch (err) {
      // Not enqueued means not accepted: remove the record rather than leave a run nobody runs.
      await deps.store.deleteRun(id, owner).catch(() => {});
      await release?.().catch(() => {});
      throw err;
    }
    deps.logger.info({ run_id: id, model: spec.model }, 'run accepted');
    return c.json(created, 202, { location: `/v1/runs/${id}` });
  });

  // A concurrent request with the same key may still be writing the run it reserved.
  async function awaitRun(runId: string): Promise<RunObject> {
    for (let i = 0; i < 100; i++) {
      const run = await deps.store.getRun(runId);
      if (run) return run;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new HttpError(409, 'idempotency_key_in_use', 'a request with this Idempotency-Key is still being processed or failed; retry shortly');
  }

  async function checkWebhook(webhook: { url: string; secret?: string }) {
    if (!webhook.secret && !deps.webhookSecret) {
      throw new HttpError(400, 'validation_error', 'webhook.secret: give a signing secret, or set WEBHOOK_SECRET on the server', [
        { field: 'webhook.secret', message: 'required when WEBHOOK_SECRET is not set' },
      ]);
    }
    if (deps.webhookAllowPrivate) return;
    const why = await refuseNonPublicUrl(webhook.url);
    if (why) throw new HttpError(400, 'validation_error', `webhook.url ${why}`, [{ field: 'webhook.url', message: why }]);
  }

  app.post('/:id/cancel', async (c) => {
    const run = await own(c.get('owner'), c.req.param('id'));
    if (isTerminal(run.status)) return c.json(run, 202);
    const ended = await cancelRun(deps, run.id);
    return c.json(ended ?? (await deps.store.getRun(run.id)), 202);
  });

  app.get('/', async (c) => {
    const q = parseOr400(listRunsQuerySchema, c.req.query(), 'query');
    return c.json(await deps.store.listRuns(c.get('owner'), q));
  });

  app.get('/:id', async (c) => c.json(await own(c.get('owner'), c.req.param('id'))));

  app.get('/:id/messages', async (c) => {
    const run = await own(c.get('owner'), c.req.param('id'));
    return c.json({ data: await deps.store.getMessages(run.id) });
  });

  app.get('/:id/steps', async (c) => {
    const run = await own(c.get('owner'), c.req.param('id'));
    return c.json({ data: await deps.store.getSteps(run.id) });
  });

  app.get('/:id/webhook-deliveries', async (c) => {
    const run = await own(c.get('owner'), c.req.param('id'));
    const raw = await deps.redis.lrange(deps.store.global.webhookDeliveries(run.id), 0, -1);
    return c.json({ data: raw.map((r) => JSON.parse(r)) });
  });

  app.get('/:id/children', async (c) => {
    const run = await own(c.get('owner'), c.req.param('id'));
    return c.json({ data: await deps.store.getChildren(run.id) });
  });

  return app;
}

/**
 * Cancels a run and its sub-runs: marks them cancelled (so no step or tool call of theirs
 * starts), tells every worker process to abort their in-flight work, and removes queued jobs.
 */
export async function cancelRun(deps: Pick<RunsRouteDeps, 'store' | 'redis' | 'agentQueue' | 'webhookQueue' | 'logger'>, runId: string): Promise<RunObject | null> {
  const ended = await finishRun(deps, runId, { status: 'cancelled', stopReason: 'cancelled' });
  await deps.redis.publish(cancelChannel(deps.store.prefix), runId);
  const state = await deps.store.getState(runId);
  if (state) {
    for (const d of [state.depth, state.depth + 1]) {
      // A job that is running cannot be removed; its worker aborts it on the cancel message.
      await deps.agentQueue.remove(jobIds.agentTurn(runId, d), { removeChildren: true }).catch(() => 0);
    }
  }
  for (const child of await deps.store.getChildren(runId)) {
    if (!isTerminal(child.status)) await cancelRun(deps, child.id);
  }
  return ended;
}

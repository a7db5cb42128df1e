import { Hono } from 'hono';
import { z } from 'zod';
import type { Queue } from 'bullmq';
import { createRunBodySchema, isRunId, jobIds, jobNames, jobOptions, newId, RUN_STATUSES, type AgentTurnJob, type Logger, type RunStore } from '@agentq/shared';
import { HttpError } from '../http-error.js';
import { buildRun, checkSizes, type RunLimits } from '../run-request.js';
import { parseOr400, readJson } from '../validation.js';

export interface RunsRouteDeps {
  store: RunStore;
  agentQueue: Queue;
  logger: Logger;
  limits: RunLimits;
  defaultModel?: string;
}

type Env = { Variables: { owner: string } };

const listQuery = z.strictObject({
  status: z.enum(RUN_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  after: z.string().regex(/^run_[0-9a-z]{21}$/, 'a run id (the "next" of the previous page)').optional(),
});

/** `/v1/runs`: create, list, read. */
export function runsRoutes(deps: RunsRouteDeps) {
  const app = new Hono<Env>();

  // A run of another owner is a 404, never a 403: its existence is not revealed.
  async function ownRun(owner: string, id: string) {
    if (!isRunId(id)) throw new HttpError(404, 'not_found', `no run with id "${id.slice(0, 100)}"`);
    const run = await deps.store.getRun(id);
    if (!run || (await deps.store.getOwner(id)) !== owner) throw new HttpError(404, 'not_found', `no run with id "${id}"`);
    return run;
  }

  app.post('/', async (c) => {
    const body = parseOr400(createRunBodySchema, await readJson(c.req), 'run request');
    checkSizes(body, deps.limits);
    const { spec, messages } = buildRun(body, deps.defaultModel);
    const owner = c.get('owner');
    const id = newId('run');
    await deps.store.createRun({ id, owner, spec, messages });
    const job: AgentTurnJob = { runId: id, depth: 0 };
    try {
      await deps.agentQueue.add(jobNames.agentTurn(id, 0), job, { ...jobOptions.agentTurn, jobId: jobIds.agentTurn(id, 0) });
    } catch (err) {
      // Not enqueued means not accepted: remove the record rather than leave a run nobody runs.
      await deps.store.deleteRun(id, owner).catch(() => {});
      throw err;
    }
    deps.logger.info({ run_id: id, model: spec.model }, 'run accepted');
    const run = await deps.store.getRun(id);
    return c.json(run, 202, { location: `/v1/runs/${id}` });
  });

  app.get('/', async (c) => {
    const q = parseOr400(listQuery, c.req.query(), 'query');
    return c.json(await deps.store.listRuns(c.get('owner'), q));
  });

  app.get('/:id', async (c) => c.json(await ownRun(c.get('owner'), c.req.param('id'))));

  app.get('/:id/messages', async (c) => {
    const run = await ownRun(c.get('owner'), c.req.param('id'));
    return c.json({ data: await deps.store.getMessages(run.id) });
  });

  app.get('/:id/steps', async (c) => {
    const run = await ownRun(c.get('owner'), c.req.param('id'));
    return c.json({ data: await deps.store.getSteps(run.id) });
  });

  app.get('/:id/children', async (c) => {
    const run = await ownRun(c.get('owner'), c.req.param('id'));
    return c.json({ data: await deps.store.getChildren(run.id) });
  });

  return app;
}

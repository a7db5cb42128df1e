import { Hono } from 'hono';
import type { RedisClient } from '@agentq/shared/infra';
import {
  createRunBodySchema,
  isRunId,
  isTerminal,
  listRunsQuerySchema,
  newId,
  ReplicationError,
  type ActionItemView,
  type RunObject,
} from '@agentq/shared/core';
import { refuseNonPublicUrl, type Logger, type Resolver } from '@agentq/shared/infra';
import { type RunStore } from '@agentq/shared/store';
import {
  limitsOf,
  withRequiredAction,
  type Admission,
  type Runs,
  type TenantTable,
  type UsageMeter,
} from '@agentq/shared/runs';
import { HttpError } from '../http-error.js';
import { ABANDONED_CLAIM_MS, claimIdempotencyKey } from '../idempotency.js';
import type { ResponseBudget } from '../response-budget.js';
import type { RunLimits } from '../run-request.js';
import { parseOr400, readJson } from '../validation.js';
import { rateLimited } from '../rate-limit.js';
import { streamRunList } from '../run-list-stream.js';
import { SharedBuilds } from '../shared-builds.js';
import { planRun } from './agents.js';

export interface RunsRouteDeps {
  store: RunStore;
  runs: Runs;
  admission: Admission;
  usage: UsageMeter;
  tenants: TenantTable;
  redis: RedisClient;
  logger: Logger;
  limits: RunLimits;
  defaultModel?: string;
  webhookSecret?: string;
  webhookAllowPrivate: boolean;
  webhookResolve?: Resolver;
  /** Adds to each request for an answer as it is shown (a signed link). */
  decorateAction?: (item: ActionItemView) => ActionItemView;
  /** Holds the large answers (a run, and its transcript, steps, sub-runs, the run list) until they are sent. */
  responses: ResponseBudget;
  /** How often a run list waiting for room in `responses` writes a line break, so that it is not cut as idle. */
  keepAliveMs: number;
}

/** A run of `tenant`, or a 404: a run of another tenant is never revealed (no 403). */
export async function ownRun(store: RunStore, tenant: string, id: string): Promise<RunObject> {
  if (!isRunId(id)) throw new HttpError(404, 'not_found', `no run with id "${id.slice(0, 100)}"`);
  const run = await store.runs.getOwn(id, tenant);
  if (!run) throw new HttpError(404, 'not_found', `no run with id "${id}"`);
  return run;
}

type Env = { Variables: { tenant: string } };

/** `/v1/runs`: create, list, read, cancel. */
export function runsRoutes(deps: RunsRouteDeps) {
  const app = new Hono<Env>();

  const own = (tenant: string, id: string) => ownRun(deps.store, tenant, id);
  // A run that waits shows what it waits for.
  const shown = (run: RunObject) => withRequiredAction(deps.store, run, deps.decorateAction);
  // An answer that grows with a run, as JSON text, built once for the requests that overlap (a
  // run still going, once for those that came before the build started).
  const builds = new SharedBuilds();
  const largeAnswer = async (what: string, run: RunObject, build: () => Promise<unknown>) =>
    isTerminal(run.status) ? builds.json(what, run.id, build) : builds.fresh(what, run.id, build);

  app.post('/', async (c) => {
    const raw = await readJson(c.req);
    const body = parseOr400(createRunBodySchema, raw, 'run request');
    const tenant = c.get('tenant');
    const plan = await planRun(deps, tenant, raw, body);
    if (plan.spec.webhook) await checkWebhook(plan.spec.webhook);
    await checkRoom(tenant);
    const id = newId('run');

    const idemKey = c.req.header('idempotency-key');
    let release: (() => Promise<void>) | undefined;
    // The claim is part of what makes the run: REDIS_WAIT_REPLICAS waits for it too (on a
    // Cluster it may live on another shard than the run).
    let claimKeys: string[] = [];
    if (idemKey !== undefined) {
      let claim = await claimIdempotencyKey(deps.redis, deps.store.global.idempotency, tenant, idemKey, raw, id);
      claimKeys = [claim.key];
      if (claim.kind === 'replay') {
        const replayed = await replay(claim.runId, claim.claimedAt);
        if (replayed) return replayOf(replayed);
        // The request that claimed the key died before writing its run: this one makes it.
        claim = await claim.takeOver();
        if (claim.kind === 'replay') return replayOf(await awaitRun(claim.runId));
      }
      release = claim.release;
    }
    let created: RunObject;
    try {
      created = await deps.runs.create(id, tenant, plan, {
        maxQueued: limitsOf(deps.tenants, tenant).max_queued_runs,
        replicatedWith: claimKeys,
      });
    } catch (err) {
      // A run its replicas did not confirm in time was made all the same: the key stays
      // claimed, so that a retry gets that run instead of making a second one.
      if (!(err instanceof ReplicationError)) await release?.().catch(() => {});
      throw err;
    }
    return c.json(created, 202, { location: `/v1/runs/${id}` });

    /** The run an earlier request with this key made, once (REDIS_WAIT_REPLICAS) its replicas hold it. */
    async function replayOf(run: RunObject) {
      await deps.runs.confirmReplicated(run.id, claimKeys);
      return deps.responses.json(c, JSON.stringify(run), 200, { location: `/v1/runs/${run.id}` });
    }
  });

  /**
   * The run an earlier request with the same key made, with its first step surely enqueued (that
   * request may have died in between); null when its run never appeared and the claim is old
   * enough to take over.
   */
  async function replay(runId: string, claimedAt: number): Promise<RunObject | null> {
    if (Date.now() - claimedAt < ABANDONED_CLAIM_MS) return awaitRun(runId);
    return (await deps.runs.recover(runId)) ? deps.store.runs.get(runId) : null;
  }

  // A concurrent request with the same key may still be writing the run it reserved.
  async function awaitRun(runId: string): Promise<RunObject> {
    for (let i = 0; i < 100; i++) {
      if (await deps.runs.recover(runId)) {
        const run = await deps.store.runs.get(runId);
        if (run) return run;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new HttpError(
      409,
      'idempotency_key_in_use',
      'a request with this Idempotency-Key is still being processed or failed; retry shortly',
    );
  }

  // max_tokens_per_day: a new run is refused (429) once the tenant's day is used up (max_queued_runs
  // is checked as the run joins its line, atomically).
  async function checkRoom(tenant: string) {
    const limits = limitsOf(deps.tenants, tenant);
    if (limits.max_tokens_per_day === null) return;
    const tokens = await deps.usage.tokensToday(tenant);
    if (tokens >= limits.max_tokens_per_day) {
      const tomorrow = new Date(new Date().toISOString().slice(0, 10)).getTime() + 24 * 3600 * 1000;
      throw rateLimited(
        `this key used ${tokens} tokens today (max_tokens_per_day ${limits.max_tokens_per_day}); ` +
          `retry after midnight UTC`,
        tomorrow - Date.now(),
      );
    }
  }

  async function checkWebhook(webhook: { url: string; secret?: string }) {
    if (!webhook.secret && !deps.webhookSecret) {
      throw new HttpError(
        400,
        'validation_error',
        'webhook.secret: give a signing secret, or set WEBHOOK_SECRET on the server',
        [{ field: 'webhook.secret', message: 'required when WEBHOOK_SECRET is not set' }],
      );
    }
    if (deps.webhookAllowPrivate) return;
    const why = await refuseNonPublicUrl(webhook.url, deps.webhookResolve);
    if (why)
      throw new HttpError(400, 'validation_error', `webhook.url ${why}`, [{ field: 'webhook.url', message: why }]);
  }

  // The run answered, as GET /:id answers it (its output may be a model's whole answer), is held
  // within MAX_RESPONSES_IN_FLIGHT_BYTES.
  app.post('/:id/cancel', async (c) => {
    const run = await own(c.get('tenant'), c.req.param('id'));
    if (isTerminal(run.status)) return deps.responses.json(c, JSON.stringify(run), 202);
    const ended = await deps.runs.cancel(run.id);
    const now = ended ?? (await deps.store.runs.get(run.id));
    return deps.responses.json(c, JSON.stringify(now ? await shown(now) : now), 202);
  });

  app.get('/', async (c) => {
    const q = parseOr400(listRunsQuerySchema, c.req.query(), 'query');
    const { q: text, top_level, ...page } = q;
    const filter = { ...page, ...(text ? { q: text } : {}), ...(top_level === 'true' ? { topLevel: true } : {}) };
    return streamRunList(c, deps.store.runs.list(c.get('tenant'), filter), {
      budget: deps.responses,
      keepAliveMs: deps.keepAliveMs,
      shown,
      onError: (err) => deps.logger.warn({ err: err.message }, 'the run list was cut short by an error'),
    });
  });

  // A run's output may be as large as a model's answer: held like the answers that grow with it.
  app.get('/:id', async (c) =>
    deps.responses.json(c, JSON.stringify(await shown(await own(c.get('tenant'), c.req.param('id'))))),
  );

  app.get('/:id/messages', async (c) => {
    const run = await own(c.get('tenant'), c.req.param('id'));
    // Its room taken before the transcript is read, by the size stored with it.
    deps.responses.hold(c, (await deps.store.transcript.storedSize(run.id)) ?? 0);
    // As stored: the messages' JSON text is the answer's, without parsing it to write it again.
    const body = `{"data":[${(await deps.store.transcript.storedMessages(run.id)).join(',')}]}`;
    return c.body(body, 200, { 'content-type': 'application/json; charset=UTF-8' });
  });

  app.get('/:id/steps', async (c) => {
    const run = await own(c.get('tenant'), c.req.param('id'));
    return deps.responses.json(
      c,
      await largeAnswer('steps', run, async () => ({ data: await deps.store.steps.list(run.id) })),
    );
  });

  app.get('/:id/webhook-deliveries', async (c) => {
    const run = await own(c.get('tenant'), c.req.param('id'));
    return c.json({ data: await deps.store.webhooks.list(run.id) });
  });

  app.get('/:id/children', async (c) => {
    const run = await own(c.get('tenant'), c.req.param('id'));
    return deps.responses.json(
      c,
      await largeAnswer('children', run, async () => ({ data: await deps.store.runs.children(run.id) })),
    );
  });

  return app;
}

import { Hono } from 'hono';
import {
  listActionsQuerySchema,
  respondBodySchema,
  type ActionItemView,
  type SchemaValidators,
} from '@agentq/shared/core';
import { type RunState, type RunStore } from '@agentq/shared/store';
import { actionView, withRequiredAction, type ActionDecision, type RunActions } from '@agentq/shared/runs';
import { checkedDecision } from '../action-answer.js';
import { HttpError } from '../http-error.js';
import type { ResponseBudget } from '../response-budget.js';
import { parseOr400, readJson } from '../validation.js';
import { ownRun } from './runs.js';

export interface ActionsRouteDeps {
  store: RunStore;
  /** Holds the run answered (its output may be a model's whole answer) until it is sent. */
  responses: ResponseBudget;
  actions: RunActions;
  /** Checks edited arguments against the tool's input schema. */
  validators: SchemaValidators;
  /** Adds to each item as it is shown (a signed link, with ACTION_LINK_SECRET). */
  decorate?: (item: ActionItemView) => ActionItemView;
}

type Env = { Variables: { tenant: string } };

/** A decision to store on a request of a waiting run. */
interface Planned {
  waiting: RunState;
  id: string;
  decision: ActionDecision;
}

/** `POST /v1/runs/:id/actions` (answers) and `GET /v1/actions` (a tenant's inbox). */
export function actionsRoutes(deps: ActionsRouteDeps) {
  const app = new Hono<Env>();
  const decorate = deps.decorate ?? ((i: ActionItemView) => i);

  app.post('/runs/:id/actions', async (c) => {
    const tenant = c.get('tenant');
    const run = await ownRun(deps.store, tenant, c.req.param('id'));
    const body = parseOr400(respondBodySchema, await readJson(c.req), 'responses');
    // Every response is checked before any is stored: a request with a bad response changes nothing.
    const planned: Planned[] = [];
    for (const [i, r] of body.responses.entries()) {
      const field = `responses.${i}`;
      const stored = await deps.store.actions.get(r.id);
      const waiting = stored ? await deps.store.runs.getState(stored.record.run_id) : null;
      // A request of another key, or of a run outside this run's tree, is not revealed.
      if (
        !stored ||
        !waiting ||
        waiting.tenant !== tenant ||
        (waiting.id !== run.id && !waiting.spec.ancestors.includes(run.id))
      ) {
        throw new HttpError(404, 'not_found', `${field}.id: no request "${r.id.slice(0, 64)}" waits on run ${run.id}`, [
          { field: `${field}.id`, message: 'no such request on this run' },
        ]);
      }
      if (stored.decision) throw resolvedError([{ id: r.id, decision: stored.decision }]);
      // Past its expires_at the request is expired, whether or not its job has woken to say so.
      const expired = await deps.actions.expireBeforeAnswer(waiting, stored);
      if (expired) throw resolvedError([{ id: r.id, decision: expired }]);
      const decision = await checkedDecision(deps, stored.record, r, tenant, field);
      planned.push({ waiting, id: r.id, decision });
    }
    const lost: Array<{ id: string; decision: ActionDecision | null }> = [];
    for (const p of planned) {
      const result = await deps.actions.decide(p.waiting, p.id, p.decision);
      if (result.kind === 'resolved') lost.push({ id: p.id, decision: result.decision });
      else if (result.kind !== 'ok') lost.push({ id: p.id, decision: null });
    }
    if (lost.length) throw resolvedError(lost, planned.length - lost.length);
    const now = await deps.store.runs.get(run.id);
    return deps.responses.json(c, JSON.stringify(now ? await withRequiredAction(deps.store, now, decorate) : run));
  });

  app.get('/actions', async (c) => {
    const q = parseOr400(listActionsQuerySchema, c.req.query(), 'query');
    const page = await deps.store.actions.inbox(c.get('tenant'), q);
    const data = page.data.map(({ record, decision }) => ({
      ...(decision ? actionView(record) : decorate(actionView(record))),
      status: decision ? ('resolved' as const) : ('pending' as const),
      ...(decision ? { decision: decision.decision, resolved_at: decision.at } : {}),
    }));
    return c.json({ data, next: page.next });
  });

  return app;
}

/** 409 `action_resolved`: the request was decided before (by someone else, an expiry or a cancel). */
function resolvedError(items: Array<{ id: string; decision: ActionDecision | null }>, applied = 0): HttpError {
  const ids = items.map((i) => i.id).join(', ');
  const note = applied ? ` (the other ${applied} response${applied === 1 ? ' was' : 's were'} stored)` : '';
  return new HttpError(
    409,
    'action_resolved',
    `already decided: ${ids}${note}`,
    items.map((i) => ({ id: i.id, decision: i.decision?.decision ?? 'cancelled', at: i.decision?.at ?? null })),
  );
}

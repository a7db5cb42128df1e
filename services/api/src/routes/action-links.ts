import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { linkAnswerSchema, type SchemaValidators } from '@agentq/shared/core';
import { type RunStore, type StoredAction } from '@agentq/shared/store';
import {
  actionView,
  type ActionDecision,
  type ActionLinks,
  type ActionRecord,
  type RunActions,
} from '@agentq/shared/runs';
import { checkedDecision } from '../action-answer.js';
import { ACTION_PAGE_CSP, actionPage, errorPage, recordedPage } from '../action-page.js';
import { drainBody, limitBody } from '../body-budget.js';
import { errorBody, HttpError } from '../http-error.js';
import { MAX_JSON_DEPTH, nestedDeeperThan, parseOr400, readJson } from '../validation.js';

/** The one path a signed link opens; nothing else is served without an API key under /v1. */
export const ACTION_LINK_ROUTE = '/v1/actions/:id/respond';

/** The largest answer a link takes: one response (the keyed route takes bigger batches). */
export const LINK_MAX_BODY_BYTES = 2 * 1024 * 1024;

export interface ActionLinkRouteDeps {
  store: RunStore;
  actions: RunActions;
  validators: SchemaValidators;
  /** Unset without ACTION_LINK_SECRET: then every link is refused (404). */
  links?: ActionLinks;
  /** The API process's bound on the bodies it holds at once, shared with /v1. */
  budget: MiddlewareHandler;
  /** MAX_BODY_BYTES: a link's body is bounded by it too. */
  maxBodyBytes: number;
}

/** How the person or program behind a request is answered: pages for a browser, JSON for a program. */
type Flavor = 'html' | 'json';

const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(;|$)/i;
const JSON_TYPE = /^application\/([\w.+-]*\+)?json\s*(;|$)/i;

/** The fields the page's forms send; anything else in a form is refused. */
const FORM_FIELDS = new Set(['approve', 'arguments', 'reason', 'output', 'answer']);

/**
 * `GET|POST /v1/actions/:id/respond?token=…`: a signed link's page and its answer, without an
 * API key. The token is checked before anything is read from Redis; one that is not this
 * request's (tampered, another request's, made up) gets 403 whatever the request is, so a link
 * tells nothing about any other; a request decided (used, expired, cancelled), gone, or past its
 * expiry gets 410. Answers go through the same checks and the same decide as the keyed route.
 */
export function actionLinkRoutes(deps: ActionLinkRouteDeps) {
  const app = new Hono();
  const maxBytes = Math.min(deps.maxBodyBytes, LINK_MAX_BODY_BYTES);

  // The page's headers go on every answer of this path, errors included: the token is in the URL
  // (no Referer may carry it away), and a page with a form must not be framed or cached.
  app.use(ACTION_LINK_ROUTE, async (c, next) => {
    await next();
    c.res.headers.set('content-security-policy', ACTION_PAGE_CSP);
    c.res.headers.set('referrer-policy', 'no-referrer');
    c.res.headers.set('x-content-type-options', 'nosniff');
    c.res.headers.set('x-frame-options', 'DENY');
    c.res.headers.set('cache-control', 'no-store');
  });
  app.use(ACTION_LINK_ROUTE, deps.budget);
  app.use(
    ACTION_LINK_ROUTE,
    limitBody(maxBytes, async (c) => {
      await drainBody(c, 2 * maxBytes);
      throw new HttpError(413, 'payload_too_large', `an answer by link is at most ${maxBytes} bytes`);
    }),
  );

  app.get(ACTION_LINK_ROUTE, (c) =>
    answering(c, 'html', async () => {
      const stored = await open(c);
      return c.html(actionPage(stored.record));
    }),
  );

  app.post(ACTION_LINK_ROUTE, async (c) => {
    const type = c.req.header('content-type') ?? '';
    const flavor: Flavor = FORM_TYPE.test(type) ? 'html' : 'json';
    return answering(c, flavor, async () => {
      if (!FORM_TYPE.test(type) && !JSON_TYPE.test(type)) {
        throw new HttpError(
          415 as never,
          'unsupported_media_type',
          `send the answer as a form (application/x-www-form-urlencoded) or as JSON (application/json); ` +
            `got "${type.slice(0, 100)}"`,
        );
      }
      const stored = await open(c);
      const { record } = stored;
      const raw = flavor === 'html' ? formAnswer(await c.req.text(), record) : await readJson(c.req);
      const answer = parseOr400(linkAnswerSchema, raw, 'answer');
      if (answer.id !== undefined && answer.id !== record.id) {
        throw new HttpError(400, 'validation_error', `id: this link answers ${record.id} only`, [
          { field: 'id', message: `this link answers ${record.id} only` },
        ]);
      }
      const waiting = await deps.store.runs.getState(record.run_id);
      if (!waiting) throw gone('the run of this request is gone');
      const decision = await checkedDecision(deps, record, { ...answer, id: record.id }, 'link');
      const result = await deps.actions.decide(waiting, record.id, decision);
      if (result.kind === 'resolved') throw decided(result.decision);
      if (result.kind !== 'ok') throw gone('this request no longer waits: its run has ended');
      if (flavor === 'html') return c.html(recordedPage(decision));
      return c.json({
        ...actionView(record),
        status: 'resolved' as const,
        decision: decision.decision,
        resolved_at: decision.at,
      });
    });
  });

  /** The request a link opens, while it waits; else 404 (links off), 403 or 410. */
  async function open(c: Context): Promise<StoredAction> {
    if (!deps.links)
      throw new HttpError(404, 'not_found', 'answering by link is off on this server (ACTION_LINK_SECRET is not set)');
    const id = c.req.param('id') ?? '';
    const check = deps.links.check(id, c.req.query('token'));
    if (check === 'invalid')
      throw new HttpError(403, 'forbidden', 'this link is not valid: its token does not open this request');
    if (check === 'expired') throw gone('this link has expired: the request it answers expired');
    const stored = await deps.store.actions.get(id);
    if (!stored) throw gone('the request of this link is gone (its run ended and was removed)');
    if (stored.decision) throw decided(stored.decision);
    const { expires_at } = stored.record;
    if (expires_at && Date.parse(expires_at) <= Date.now())
      throw gone('this link has expired: the request it answers expired');
    return stored;
  }

  return app;
}

const gone = (message: string) => new HttpError(410, 'link_gone', message);
const decided = (d: ActionDecision) =>
  new HttpError(410, 'action_resolved', `this request was already decided: ${d.decision} at ${d.at}`, [
    { decision: d.decision, at: d.at },
  ]);

/**
 * Runs a link's handler, rendering a refusal as the caller reads it: a page for a browser (a GET,
 * a form), the error shape for JSON. Anything but an HttpError (Redis down, a bug) goes to the
 * app's one error handler.
 */
async function answering(c: Context, flavor: Flavor, handle: () => Promise<Response>): Promise<Response> {
  try {
    return await handle();
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    if (flavor === 'html') return c.html(errorPage(err.status, err.message), err.status, err.headers);
    return c.json(errorBody(err.code, err.message, err.details), err.status, err.headers);
  }
}

/**
 * The answer a form sends, as the JSON body would say it. Only the fields the page's forms have
 * are read (no field name becomes a key of anything), each at most once. A form sends every
 * box it has: an empty reason is none, and an edit box sent back unchanged is no edit.
 */
function formAnswer(text: string, record: ActionRecord): Record<string, unknown> {
  const params = new URLSearchParams(text);
  for (const name of params.keys()) {
    if (!FORM_FIELDS.has(name)) throw fieldError(name.slice(0, 64) || '(empty name)', 'unknown field');
  }
  const one = (name: string): string | undefined => {
    const all = params.getAll(name);
    if (all.length > 1) throw fieldError(name, 'given more than once');
    return all[0];
  };
  const approveText = one('approve');
  let approve: boolean | undefined;
  if (approveText === 'true') approve = true;
  else if (approveText === 'false') approve = false;
  else if (approveText !== undefined) throw fieldError('approve', '"true" or "false"');
  const reason = one('reason');
  let args = one('arguments');
  if (args !== undefined && approve === true && sameJson(args, record.arguments)) args = undefined;
  const output = one('output');
  const answer = one('answer');
  return {
    ...(approve !== undefined ? { approve } : {}),
    ...(args !== undefined ? { arguments: args } : {}),
    ...(reason ? { reason } : {}),
    ...(output !== undefined ? { output } : {}),
    ...(answer !== undefined ? { answer } : {}),
  };
}

/** Whether two texts are the same JSON value written differently (pretty-printed, CRLF line ends). */
function sameJson(a: string, b: string): boolean {
  if (nestedDeeperThan(a, MAX_JSON_DEPTH) || nestedDeeperThan(b, MAX_JSON_DEPTH)) return false;
  try {
    return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
  } catch {
    return false;
  }
}

const fieldError = (field: string, message: string) =>
  new HttpError(400, 'validation_error', `${field}: ${message}`, [{ field, message }]);

import type { Logger } from 'pino';
import { parseActionId, type ActionDecision, type ActionRecord } from '../actions/action-record.js';
import { runWebhookId } from '../core/ids.js';
import type { JobQueues } from '../jobs/job-queues.js';
import type { ActionRun, ResolveResult, StoredAction } from '../store/actions.js';
import type { RunState } from '../store/run-hash.js';
import type { RunStore } from '../store/run-store.js';
import type { Runs } from './runs.js';

/**
 * The longest a waiting tool-call job stays delayed at once (a request without expiry): it then
 * wakes, finds no decision and parks itself again.
 */
export const DEFAULT_ACTION_PARK_MS = 30 * 24 * 3600 * 1000;

export interface RunActionsDeps {
  store: RunStore;
  jobs: JobQueues;
  /** Runs that wait give their admission slots up, and take them back when they go on. */
  runs: Runs;
  logger: Logger;
  /**
   * Called at named points, so that a test can kill the process exactly there (the API's
   * AGENTQ_FAILPOINT); unset in production.
   */
  failpoint?: (point: 'action_decided') => void;
}

/** A run as the scripts of its requests need it. */
export const actionRun = (run: Pick<RunState, 'id' | 'tenant' | 'spec'>): ActionRun => ({
  id: run.id,
  tenant: run.tenant,
  ancestors: run.spec.ancestors,
});

/**
 * Runs that wait for people: the one tenant of a request's life. A round's requests are stored
 * before its tool jobs are added (the jobs that wait are added delayed until their request
 * expires: no lock, no worker slot, no process memory); an answer is stored once (the first of
 * answer, expiry and cancel wins) and then wakes its job (BullMQ's promote); the job acts on the
 * decision stored, never on anything it was handed, so a rejected or expired call never runs.
 */
export class RunActions {
  constructor(private readonly deps: RunActionsDeps) {}

  /**
   * Stores a round's requests and tells the root's webhook (`run.requires_action`).
   * Before the round's jobs are added: a step that dies in between is redone and asks nothing twice.
   * The webhook's id is fixed by the run and round, so the redo of a step that died after storing
   * its requests and before queuing the webhook queues it, and one queued already stays one.
   */
  async require(run: RunState, records: ActionRecord[]): Promise<void> {
    if (records.length === 0) return;
    const { made, waiting } = await this.deps.store.actions.require(actionRun(run), records);
    if (made < 0) return;
    if (made > 0) {
      this.deps.logger.info({ run_id: run.id, requests: made }, 'run waits for an answer');
      await this.deps.runs.suspended(run.tenant, waiting);
    }
    if (run.spec.webhook || run.spec.root_webhook) {
      await this.deps.jobs.enqueue('webhook', {
        runId: run.rootRunId,
        webhookId: runWebhookId(run.id, records[0].depth),
        type: 'run.requires_action',
      });
    }
  }

  /**
   * Stores a decision on a request of `run` (the waiting run) and wakes its job. The request is
   * marked answered before the decision is stored and unmarked once its job is woken, so that a
   * process dying in between leaves a mark the sweep (sweepAnswered) finishes.
   */
  async decide(run: RunState, id: string, decision: ActionDecision): Promise<ResolveResult> {
    const { actions } = this.deps.store;
    await actions.markAnswered(id);
    let result: ResolveResult;
    try {
      result = await actions.resolve(actionRun(run), id, decision);
    } catch (err) {
      await actions.unmarkAnswered(id).catch(() => {});
      throw err;
    }
    if (result.kind === 'ok') {
      this.deps.failpoint?.('action_decided');
      await this.deps.runs.resumed(run.tenant, result.resumed);
      await this.wake(id);
    } else await actions.unmarkAnswered(id);
    return result;
  }

  /** Wakes the job of an answered request (it may be awake already) and unmarks it. */
  private async wake(id: string): Promise<void> {
    const ref = parseActionId(id);
    if (ref) await this.deps.jobs.promoteToolCall(ref);
    await this.deps.store.actions.unmarkAnswered(id);
  }

  /**
   * After a round's jobs are added: wakes those whose request was answered before its job
   * existed (an answer may come as soon as the request is stored; its promote then found no job).
   */
  async wakeAnsweredEarly(run: Pick<RunState, 'id'>, ids: string[]): Promise<void> {
    for (const id of await this.deps.store.actions.decided(run.id, ids)) {
      const ref = parseActionId(id);
      if (ref) await this.deps.jobs.promoteToolCall(ref);
    }
  }

  /** Wakes the jobs of requests answered more than `graceMs` ago whose process died before waking them. */
  async sweepAnswered(graceMs: number): Promise<number> {
    const ids = await this.deps.store.actions.answeredBefore(Date.now() - graceMs);
    for (const id of ids)
      await this.wake(id).catch((err: Error) =>
        this.deps.logger.warn({ action_id: id, err: err.message }, "could not wake an answered request's job"),
      );
    return ids.length;
  }

  /**
   * What a woken job acts on: the decision stored; else, once its request has expired, `expired`
   * (unless an answer won the race); else null (woken early: it parks again).
   */
  async decisionOnWake(run: RunState, stored: StoredAction, now = Date.now()): Promise<ActionDecision | null> {
    if (stored.decision) return stored.decision;
    return this.expireIfDue(run, stored, now);
  }

  /**
   * An answer that comes once its request has expired is too late, even before the request's
   * job has woken to expire it: the expiry is stored then (the first decision stored wins, so an
   * answer stored just before stands) and the job woken to act on it. Returns the decision that
   * stands, or null if the request has not expired.
   */
  async expireBeforeAnswer(run: RunState, stored: StoredAction, now = Date.now()): Promise<ActionDecision | null> {
    const decision = await this.expireIfDue(run, stored, now);
    if (decision?.decision === 'expired') await this.wake(stored.record.id);
    return decision;
  }

  /** Stores `expired` on a request whose time has passed (unless a decision won the race); the decision that stands, or null if it has not expired. */
  private async expireIfDue(run: RunState, stored: StoredAction, now: number): Promise<ActionDecision | null> {
    const { expires_at } = stored.record;
    if (!expires_at || Date.parse(expires_at) > now) return null;
    const expired: ActionDecision = { decision: 'expired', by: 'agentq', at: new Date(now).toISOString() };
    const r = await this.deps.store.actions.resolve(actionRun(run), stored.record.id, expired);
    if (r.kind === 'ok') {
      await this.deps.runs.resumed(run.tenant, r.resumed);
      return expired;
    }
    if (r.kind === 'resolved') return r.decision;
    return { decision: 'cancelled', by: 'agentq', at: expired.at };
  }
}

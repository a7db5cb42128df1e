import type { RedisClient } from '../infra/redis.js';
import type { Logger } from 'pino';
import { RateLimitedError, ReplicationError } from '../core/errors.js';
import { cellOf, cellPrefix } from '../jobs/cells.js';
import { runWebhookId } from '../core/ids.js';
import { waitForReplicas } from '../infra/redis-wait.js';
import type { JobInput } from '../jobs/catalog.js';
import type { JobQueues } from '../jobs/job-queues.js';
import { inTrace, startRunTrace } from '../infra/run-tracing.js';
import type { ChatMessage } from '../core/schemas/message.js';
import { isTerminal, type RunObject, type RunSpec, type RunStatus } from '../core/schemas/run.js';
import type { RunState } from '../store/run-hash.js';
import type { EndedRun, FinishInput } from '../store/run-records.js';
import type { RunStore } from '../store/run-store.js';
import type { Admission, WaitReason } from './admission.js';
import { childSpec, type RunPlan } from './run-spec.js';

/** Told of each run transition once, by the process whose write made it (for metrics). */
export interface RunObserver {
  runCreated?(spec: RunSpec): void;
  runStarted?(runId: string): void;
  runFinished?(run: RunObject, spec: RunSpec): void;
}

export interface RunsDeps {
  store: RunStore;
  jobs: JobQueues;
  /** Each key's line and slots. */
  admission: Admission;
  logger: Logger;
  observer?: RunObserver;
  /** A connection to publish cancels on (one not in subscriber mode). */
  publisher?: RedisClient;
  /**
   * REDIS_WAIT_REPLICAS: before a new run is accepted, this many replicas must hold its writes
   * (the run, its place in line, its first job), waited for up to `timeoutMs` on `connections`.
   */
  durability?: { replicas: number; timeoutMs: number; connections: RedisClient[] };
  /**
   * Called at named points of a run's creation, so that a test can kill the process exactly
   * there (the API's AGENTQ_FAILPOINT); unset in production.
   */
  failpoint?: (point: 'run_written') => void;
}

// Descendants ended per batch of a cancel (two round trips each).
const CANCEL_BATCH = 500;

/** Where a sub-run is started from: the parent's tool call, whose job waits for it. */
export interface ChildOrigin {
  depth: number;
  index: number;
  toolCallId: string;
}

/**
 * The one tenant of a run's life: every run is created, admitted, started, ended and cancelled
 * here, and each transition carries its event, metric, webhook and admission with it.
 */
export class Runs {
  constructor(private readonly deps: RunsDeps) {}

  /**
   * Stores a new root run with its context and puts it in its tenant's line, from which it is
   * admitted at once if the key (and the service) have room, else when a run ends; an admitted
   * run's first step is enqueued. A run that cannot be written, lined up or (if admitted)
   * enqueued is removed again: not enqueued or lined up means not accepted.
   */
  async create(
    id: string,
    tenant: string,
    plan: RunPlan,
    limits: {
      maxQueued?: number /** Other keys written for this run (an Idempotency-Key's claim) that REDIS_WAIT_REPLICAS waits for too. */;
      replicatedWith?: string[];
    } = {},
  ): Promise<RunObject> {
    const { store, admission } = this.deps;
    const trace = startRunTrace(id, plan.spec.model);
    let created: RunObject;
    let admitted: string[];
    try {
      // The context goes first: a run is never seen without it.
      if (plan.context) await store.contexts.put(id, plan.context);
      // The run is written as pending; should this process die before it is lined up or its
      // first step enqueued, sweepPending (every API process, at start and periodically) does it.
      const sized = await store.runs.createSized({ id, tenant, spec: plan.spec, messages: plan.messages });
      created = sized.run;
      const first: JobInput<'agentStep'> = { runId: id, depth: 0, ...trace, transcriptBytes: sized.transcriptBytes };
      this.deps.failpoint?.('run_written');
      const arrival = await admission.arrive(tenant, id, limits.maxQueued);
      if (arrival.full)
        throw new RateLimitedError(
          `this key has ${limits.maxQueued} runs waiting to start (max_queued_runs); retry when some have started`,
          5_000,
        );
      admitted = arrival.admitted;
      if (admitted.includes(id)) await inTrace(first, () => this.deps.jobs.enqueue('agentStep', first));
    } catch (err) {
      await admission.release(tenant, id).catch(() => []);
      await store.runs.delete(id, tenant).catch(() => {});
      throw err;
    }
    // Not awaited: a run left pending is settled again by the sweep, at no harm.
    void store.runs.settle(id).catch(() => {});
    await this.enqueueAdmitted(admitted.filter((a) => a !== id));
    await this.confirmReplicated(id, limits.replicatedWith);
    this.deps.observer?.runCreated?.(plan.spec);
    this.deps.logger.info({ run_id: id, model: plan.spec.model, queued: !admitted.includes(id) }, 'run accepted');
    return created;
  }

  /**
   * REDIS_WAIT_REPLICAS: the run is accepted only once that many replicas hold what made it
   * (`alsoKeys`: keys written for it elsewhere, such as its Idempotency-Key's claim); else a
   * ReplicationError. The run was made all the same: a retry with the same
   * Idempotency-Key gets it, once the replicas confirm it.
   */
  async confirmReplicated(runId: string, alsoKeys: string[] = []): Promise<void> {
    const d = this.deps.durability;
    if (!d || d.replicas <= 0) return;
    const g = this.deps.store.global;
    const keys = [
      this.deps.store.keys(runId).run,
      g.pendingRuns,
      `${cellPrefix(this.deps.store.prefix, cellOf(runId, this.deps.jobs.cells))}:agent`,
      ...alsoKeys,
    ];
    const acked = await waitForReplicas(d.connections, keys, d.replicas, d.timeoutMs);
    if (acked < d.replicas) {
      throw new ReplicationError(
        `only ${acked} of ${d.replicas} replicas confirmed the run ${runId} within ${d.timeoutMs} ms (REDIS_WAIT_REPLICAS); it may still run: retry with the same Idempotency-Key to get it`,
      );
    }
  }

  /**
   * Enqueues the first step of runs just admitted (by this process's call: another tenant's run
   * may be among them) and settles them. One that fails stays pending for the sweep.
   */
  private async enqueueAdmitted(ids: string[]): Promise<void> {
    await Promise.all(
      ids.map(async (runId) => {
        try {
          await this.deps.jobs.enqueue('agentStep', { runId, depth: 0 });
          await this.deps.store.runs.settle(runId);
        } catch (err) {
          this.deps.logger.warn(
            { run_id: runId, err: (err as Error).message },
            'could not enqueue an admitted run; the sweep will',
          );
        }
      }),
    );
  }

  /**
   * Makes sure a run that was written is lined up or, admitted, has its first step enqueued (the
   * job id makes a second add a no-op), then settles it. False if there is no such run. Used by
   * the sweep and by an idempotent retry of the request.
   */
  async recover(runId: string): Promise<boolean> {
    const { store, admission } = this.deps;
    const run = await store.runs.getState(runId);
    if (run?.status === 'queued') await this.enqueueAdmitted((await admission.arrive(run.tenant, runId)).admitted);
    await store.runs.settle(runId);
    return run !== null;
  }

  /**
   * The sweep every API process runs: recovers runs left pending for longer than `graceMs`,
   * releases the slots of runs that ended without releasing them (their process died), and
   * admits what there is room for. Returns how many pending runs it looked at.
   */
  async sweepPending(graceMs: number): Promise<number> {
    const ids = await this.deps.store.runs.pending(Date.now() - graceMs);
    for (const id of ids) await this.recover(id);
    await this.enqueueAdmitted(await this.deps.admission.admit());
    return ids.length;
  }

  /**
   * Puts admission right where a process died half-way: releases the slots of runs that have
   * ended (or are gone), gives up those of runs that wait for an answer, takes back those of
   * runs that wait for one no more. A run waiting on its sub-runs is its tool job's to resume
   * (the job that completes its round does), unless it has ended. Returns how many runs it moved.
   */
  async reconcileAdmission(): Promise<number> {
    const { admission, store } = this.deps;
    let moved = 0;
    for (const [tenant, sets] of await admission.activeByTenant()) {
      const ids = [...sets.active, ...sets.waiting, ...sets.parked];
      const states = await Promise.all(ids.map((id) => store.runs.getState(id)));
      for (const [i, st] of states.entries()) {
        const id = ids[i]!;
        const inActive = i < sets.active.length;
        const inWaiting = !inActive && i < sets.active.length + sets.waiting.length;
        if (!st || isTerminal(st.status)) await this.enqueueAdmitted(await admission.release(tenant, id));
        else if (inActive && st.status === 'requires_action')
          await this.enqueueAdmitted(await admission.suspend(tenant, [id], 'answer'));
        else if (inWaiting && st.status !== 'requires_action') await admission.resume(tenant, [id], 'answer');
        else continue;
        moved++;
      }
    }
    return moved;
  }

  /**
   * Reserves room for the `count` sub-runs of `parent`'s call `callRef` in its tree, once per
   * call (a call done again reserves nothing more); null if they fit, else why not (the tree would
   * pass its tenant's max_runs_per_tree). A refused call counts nothing.
   */
  async reserveSubruns(parent: RunState, callRef: string, count: number): Promise<string | null> {
    const limit = await this.deps.admission.treeLimit(parent.tenant);
    const { reserved, size } = await this.deps.store.runs.reserveSubruns(parent.rootRunId, callRef, count, limit);
    if (reserved) return null;
    return `this run tree would have ${size} runs, past its limit of ${limit} (max_runs_per_tree); answer this part yourself`;
  }

  /**
   * Creates a sub-run of `parent` (once: its id is fixed by the caller, so a redelivered tool
   * job makes no second child) and puts it in its tenant's line like any run: it starts when its
   * tenant has room, fairly beside the tenant's other runs and other tenants'.
   */
  async createChild(
    parent: RunState,
    child: { id: string; messages: ChatMessage[]; index: number; spec?: RunSpec },
    origin: ChildOrigin,
  ): Promise<void> {
    const { store, admission } = this.deps;
    // A sub-run of a saved agent comes with its spec (see agentChildSpec).
    const spec = child.spec ?? childSpec(parent, { depth: origin.depth, index: origin.index });
    // Written only if it does not exist (atomically: two deliveries of the job at once write it once).
    const written = await store.runs.createSized({
      id: child.id,
      tenant: parent.tenant,
      spec,
      messages: child.messages,
      parentRunId: parent.id,
      rootRunId: parent.rootRunId,
    });
    if (written.created) this.deps.observer?.runCreated?.(spec);
    // Listed under its parent whether it was written now or by a delivery that died before
    // listing it (a sub-run /children would never show otherwise); announced once, when listed.
    if (await store.runs.addChild(parent.id, child.id)) {
      await store.events.append(parent.id, 'subrun.started', {
        run_id: child.id,
        depth: origin.depth,
        tool_call_id: origin.toolCallId,
        index: child.index,
      });
    }
    // A sub-run written by an earlier delivery may have started, or ended, since: it is in line
    // (or past it) already.
    if (!written.created && (await store.runs.statuses([child.id]))[0] !== 'queued') return;
    const { admitted } = await admission.arrive(parent.tenant, child.id);
    if (admitted.includes(child.id)) {
      // The sub-run's trace hangs under the tool call's span.
      const first: JobInput<'agentStep'> = {
        runId: child.id,
        depth: 0,
        ...startRunTrace(child.id, spec.model),
        ...(written.created ? { transcriptBytes: written.transcriptBytes } : {}),
      };
      await this.deps.jobs.enqueue('agentStep', first);
    }
    await this.enqueueAdmitted(admitted.filter((a) => a !== child.id));
    void store.runs.settle(child.id).catch(() => {});
  }

  /**
   * Runs that began to wait (for an answer, or on their sub-runs) give their slots up (they hold
   * nothing while they wait), and runs waiting for room are admitted into it.
   */
  async suspended(tenant: string, runIds: string[], reason: WaitReason = 'answer'): Promise<void> {
    if (runIds.length) await this.enqueueAdmitted(await this.deps.admission.suspend(tenant, runIds, reason));
  }

  /** Runs that waited go on, taking their slots back (see Admission.resume). */
  async resumed(tenant: string, runIds: string[], reason: WaitReason = 'answer'): Promise<void> {
    if (runIds.length) await this.deps.admission.resume(tenant, runIds, reason);
  }

  /** Moves a queued run to running (and emits `run.started`); true the first time only. */
  async start(runId: string): Promise<boolean> {
    const started = await this.deps.store.runs.start(runId);
    if (started) this.deps.observer?.runStarted?.(runId);
    return started;
  }

  /**
   * Ends a run once, with its terminal event, and queues its webhook if it has one; its slot is
   * released, and runs waiting for room are admitted. A run that has already ended is left as it
   * is, and null returned.
   */
  async finish(runId: string, input: FinishInput): Promise<RunObject | null> {
    const ended = await this.deps.store.runs.finish(runId, input);
    if (!ended) return null;
    await this.afterEnd(ended);
    this.deps.logger.info(
      { run_id: runId, depth: ended.run.depth, status: ended.run.status, stop_reason: ended.run.stop_reason },
      'run finished',
    );
    return ended.run;
  }

  private async afterEnd({ run, spec, tenant, wasWaiting }: EndedRun): Promise<void> {
    this.deps.observer?.runFinished?.(run, spec);
    try {
      // What still waited is cancelled (an answer now gets 409), and waits no more on the ancestors.
      if (wasWaiting) {
        await this.deps.store.actions
          .cancelPending({ id: run.id, tenant, ancestors: spec.ancestors })
          .then(({ resumed }) => this.resumed(tenant, resumed))
          .catch((err: Error) =>
            this.deps.logger.warn(
              { run_id: run.id, err: err.message },
              'could not cancel the requests of an ended run',
            ),
          );
      }
      if (spec.webhook) await this.enqueueEndWebhook(run.id, run.status);
      // A sub-run wakes the job of the call that waits for it (which finds whether its other
      // sub-runs have ended too; a wake that is lost, it makes up for by looking again later).
      if (spec.parent_call && run.parent_run_id) {
        await this.deps.jobs
          .promoteToolCall({ runId: run.parent_run_id, ...spec.parent_call })
          .catch((err: Error) =>
            this.deps.logger.warn({ run_id: run.id, err: err.message }, 'could not wake the parent call'),
          );
      }
    } finally {
      // A slot not released here (Redis refused) is found by the API's reconciling sweep.
      await this.enqueueAdmitted(await this.deps.admission.release(tenant, run.id));
    }
  }

  /**
   * For a step that finds its run ended: the run's terminal webhook is queued, if it has one and
   * it was not (the process that ended the run died before it queued it, or Redis refused). Its
   * job id, like its `webhook-id`, is fixed by the run, so one queued before makes this a no-op.
   */
  async ensureEndWebhook(run: Pick<RunState, 'id' | 'status' | 'spec'>): Promise<void> {
    if (run.spec.webhook && isTerminal(run.status)) await this.enqueueEndWebhook(run.id, run.status);
  }

  // One terminal event a run: its webhook's id is the run's, sent again under the same id.
  private enqueueEndWebhook(runId: string, status: RunStatus): Promise<unknown> {
    return this.deps.jobs.enqueue('webhook', { runId, webhookId: runWebhookId(runId), type: `run.${status}` });
  }

  /**
   * Cancels a run and the tree below it. The run is marked cancelled first: from then on no
   * model step or tool call of it or of any descendant starts (every job checks its ancestors'
   * statuses before it does anything), whatever the size of the tree. Then, in bulk, every
   * worker process is told to abort their in-flight work, the descendants are ended (their
   * events and metrics) and their queued steps removed.
   */
  async cancel(runId: string): Promise<RunObject | null> {
    return this.endTree(runId, { status: 'cancelled', stopReason: 'cancelled' });
  }

  /**
   * Ends a run as `input` says and cancels the tree below it, as cancel does: a run that ends
   * while sub-runs of it still work (a request's expiry under `on_timeout: "stop"`) leaves none
   * of them running.
   */
  async endTree(runId: string, input: FinishInput): Promise<RunObject | null> {
    const cancelled = { status: 'cancelled', stopReason: 'cancelled' } as const;
    const ended = await this.finish(runId, input);
    const state = await this.deps.store.runs.getState(runId);
    await this.stopQueued([{ id: runId, depth: state?.depth ?? 0 }]);
    const descendants = await this.deps.store.runs.descendants(runId);
    for (let i = 0; i < descendants.length; i += CANCEL_BATCH) {
      const batch = await this.deps.store.runs.finishMany(descendants.slice(i, i + CANCEL_BATCH), cancelled);
      await Promise.all(batch.map((ended) => this.afterEnd(ended)));
      await this.stopQueued(batch.map(({ run }) => ({ id: run.id, depth: run.depth })));
    }
    if (descendants.length)
      this.deps.logger.info({ run_id: runId, descendants: descendants.length }, 'cancelled a run tree');
    return ended;
  }

  /** Aborts the runs' in-flight work in every worker process and removes their queued steps. */
  private async stopQueued(runs: Array<{ id: string; depth: number }>): Promise<void> {
    const { publisher, store, jobs } = this.deps;
    if (publisher) {
      const pipe = publisher.pipeline();
      for (const r of runs) pipe.publish(store.global.cancelChannel, r.id);
      await pipe.exec();
    }
    // A job that is running cannot be removed; its worker aborts it on the cancel message.
    await Promise.all(
      runs.flatMap((r) =>
        [r.depth, r.depth + 1].map((depth) => jobs.remove('agentStep', { runId: r.id, depth }).catch(() => {})),
      ),
    );
  }
}

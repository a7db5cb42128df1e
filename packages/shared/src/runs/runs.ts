import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { newId } from '../ids.js';
import type { AgentStepJob } from '../jobs/catalog.js';
import type { JobQueues, ParentJob } from '../jobs/job-queues.js';
import { inTrace, startRunTrace } from '../run-tracing.js';
import type { ChatMessage } from '../schemas/message.js';
import type { RunObject, RunSpec } from '../schemas/run.js';
import type { RunState } from '../store/run-hash.js';
import type { FinishInput } from '../store/run-records.js';
import type { RunStore } from '../store/run-store.js';
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
  logger: Logger;
  observer?: RunObserver;
  /** A connection to publish cancels on (one not in subscriber mode). */
  publisher?: Redis;
  /**
   * Called at named points of a run's creation, so that a test can kill the process exactly
   * there (the API's AGENTQ_FAILPOINT); unset in production.
   */
  failpoint?: (point: 'run_written') => void;
}

// Descendants ended per batch of a cancel (two round trips each).
const CANCEL_BATCH = 500;

/** Where a sub-run is started from: the parent's tool call and the job that waits for it. */
export interface ChildOrigin {
  job: ParentJob;
  depth: number;
  toolCallId: string;
}

/**
 * The one owner of a run's life: every run is created, started, ended and cancelled here, and
 * each transition carries its event, metric and webhook with it.
 */
export class Runs {
  constructor(private readonly deps: RunsDeps) {}

  /**
   * Stores a new root run with its context and enqueues its first step. A run that cannot be
   * enqueued is removed again: not enqueued means not accepted.
   */
  async create(id: string, owner: string, plan: RunPlan): Promise<RunObject> {
    const { store } = this.deps;
    const first: AgentStepJob = { runId: id, depth: 0, ...startRunTrace(id, plan.spec.model) };
    let created: RunObject;
    try {
      // The context goes first: a run is never seen without it.
      if (plan.context) await store.contexts.put(id, plan.context);
      // The run is written as pending; should this process die before its first step is
      // enqueued, sweepPending (every API process, on start and periodically) enqueues it.
      created = await store.runs.create({ id, owner, spec: plan.spec, messages: plan.messages });
      this.deps.failpoint?.('run_written');
      await inTrace(first, () => this.deps.jobs.enqueue('agentStep', first));
    } catch (err) {
      await store.runs.delete(id, owner).catch(() => {});
      throw err;
    }
    // Not awaited: a run left pending is settled again by the sweep, at no harm.
    void store.runs.settle(id).catch(() => {});
    this.deps.observer?.runCreated?.(plan.spec);
    this.deps.logger.info({ run_id: id, model: plan.spec.model }, 'run accepted');
    return created;
  }

  /**
   * Makes sure a run that was written has its first step enqueued: enqueues it if the run is
   * still queued (the job id makes a second add a no-op), then settles it. False if there is no
   * such run. Used by the sweep and by an idempotent retry of the request.
   */
  async recover(runId: string): Promise<boolean> {
    const { store } = this.deps;
    const run = await store.runs.getState(runId);
    if (run?.status === 'queued') {
      const first: AgentStepJob = { runId, depth: 0 };
      await this.deps.jobs.enqueue('agentStep', first, { parent: run.spec.parent_job });
      this.deps.logger.warn({ run_id: runId }, 'enqueued the first step of a run its creator left pending');
    }
    await store.runs.settle(runId);
    return run !== null;
  }

  /** Recovers every run left pending for longer than `graceMs`; returns how many it looked at. */
  async sweepPending(graceMs: number): Promise<number> {
    const ids = await this.deps.store.runs.pending(Date.now() - graceMs);
    for (const id of ids) await this.recover(id);
    return ids.length;
  }

  /**
   * Creates a sub-run of `parent` (once: its id is fixed by the caller, so a redelivered tool
   * job makes no second child) and enqueues its first step as a child of the tool job that
   * waits for it.
   */
  async createChild(parent: RunState, child: { id: string; messages: ChatMessage[]; index: number }, origin: ChildOrigin): Promise<void> {
    const { store } = this.deps;
    const spec = childSpec(parent, origin.job);
    if (!(await store.runs.exists(child.id))) {
      await store.runs.create({ id: child.id, owner: parent.owner, spec, messages: child.messages, parentRunId: parent.id, rootRunId: parent.rootRunId });
      this.deps.observer?.runCreated?.(spec);
      await store.runs.addChild(parent.id, child.id);
      await store.events.append(parent.id, 'subrun.started', { run_id: child.id, depth: origin.depth, tool_call_id: origin.toolCallId, index: child.index });
    }
    // The sub-run's trace hangs under the tool call's span.
    const first: AgentStepJob = { runId: child.id, depth: 0, ...startRunTrace(child.id, spec.model) };
    await this.deps.jobs.enqueue('agentStep', first, { parent: origin.job });
    void store.runs.settle(child.id).catch(() => {});
  }

  /** Moves a queued run to running (and emits `run.started`); true the first time only. */
  async start(runId: string): Promise<boolean> {
    const started = await this.deps.store.runs.start(runId);
    if (started) this.deps.observer?.runStarted?.(runId);
    return started;
  }

  /**
   * Ends a run once, with its terminal event, and queues its webhook if it has one. A run that
   * has already ended is left as it is, and null returned.
   */
  async finish(runId: string, input: FinishInput): Promise<RunObject | null> {
    const ended = await this.deps.store.runs.finish(runId, input);
    if (!ended) return null;
    const { run, spec } = ended;
    this.deps.observer?.runFinished?.(run, spec);
    this.deps.logger.info({ run_id: runId, depth: run.depth, status: run.status, stop_reason: run.stop_reason }, 'run finished');
    if (spec.webhook) await this.deps.jobs.enqueue('webhook', { runId, webhookId: newId('whk'), type: `run.${run.status}` });
    return run;
  }

  /**
   * Cancels a run and the tree below it. The run is marked cancelled first: from then on no
   * model step or tool call of it or of any descendant starts (every job checks its ancestors'
   * statuses before it does anything), whatever the size of the tree. Then, in bulk, every
   * worker process is told to abort their in-flight work, the descendants are ended (their
   * events and metrics) and their queued steps removed.
   */
  async cancel(runId: string): Promise<RunObject | null> {
    const cancelled = { status: 'cancelled', stopReason: 'cancelled' } as const;
    const ended = await this.finish(runId, cancelled);
    const state = await this.deps.store.runs.getState(runId);
    await this.stopQueued([{ id: runId, depth: state?.depth ?? 0 }]);
    const descendants = await this.deps.store.runs.descendants(runId);
    for (let i = 0; i < descendants.length; i += CANCEL_BATCH) {
      const batch = await this.deps.store.runs.finishMany(descendants.slice(i, i + CANCEL_BATCH), cancelled);
      for (const { run, spec } of batch) this.deps.observer?.runFinished?.(run, spec);
      await this.stopQueued(batch.map(({ run }) => ({ id: run.id, depth: run.depth })));
    }
    if (descendants.length) this.deps.logger.info({ run_id: runId, descendants: descendants.length }, 'cancelled a run tree');
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
    await Promise.all(runs.flatMap((r) => [r.depth, r.depth + 1].map((depth) => jobs.remove('agentStep', { runId: r.id, depth }).catch(() => {}))));
  }
}

import { Job, Queue, type JobsOptions, type Telemetry } from 'bullmq';
import type { RedisClient } from '../infra/redis.js';
import type { Logger } from 'pino';
import { quietConnectionErrors } from '../infra/redis.js';
import {
  JOB_KINDS,
  QUEUES,
  toolCallJobId,
  type JobInput,
  type JobKind,
  type QueueName,
  type ToolCallRef,
} from './catalog.js';
import { cellList, cellOf, cellPrefix, cellQueueName } from './cells.js';

/**
 * The producer side of the job catalog: adds jobs of a kind with their id, name and options,
 * parsed against their schema, so that no job carries a field its schema does not know, to
 * the queues of the cell of the job's run. Owns its Queue objects (made on
 * first use) and closes them; the connection is its caller's.
 */
export class JobQueues {
  private readonly queues = new Map<string, Queue>();
  readonly cells: number;

  constructor(
    private readonly opts: {
      connection: RedisClient;
      prefix: string;
      logger: Logger;
      cells?: number;
      telemetry?: Telemetry;
    },
  ) {
    this.cells = opts.cells ?? 1;
  }

  /** A queue of a cell. */
  queue(name: QueueName, cell = 0): Queue {
    const key = `${cell}:${name}`;
    let q = this.queues.get(key);
    if (!q) {
      const qName = cellQueueName(name, cell, this.cells);
      q = quietConnectionErrors(
        new Queue(qName, {
          connection: this.opts.connection,
          prefix: cellPrefix(this.opts.prefix, cell),
          telemetry: this.opts.telemetry,
        }),
        this.opts.logger,
        `${qName} queue`,
      );
      this.queues.set(key, q);
    }
    return q;
  }

  /** Every queue of every cell (for the dashboard and the queue-depth metric). */
  all(): Queue[] {
    return cellList(this.cells).flatMap((cell) => Object.values(QUEUES).map((name) => this.queue(name, cell)));
  }

  private cellOf(data: { runId: string }): number {
    return cellOf(data.runId, this.cells);
  }

  /**
   * Adds a job of kind `kind` (its data parsed against the kind's schema), once: a job whose id
   * is taken is not added again. `delay`: held back this long (ms) unless promoted first.
   */
  async enqueue<K extends JobKind>(kind: K, data: JobInput<K>, opts: { delay?: number } = {}): Promise<void> {
    await this.enqueueMany(kind, [{ data, ...opts }]);
  }

  /** Adds jobs of one kind and one run's cell at once (one transaction). */
  async enqueueMany<K extends JobKind>(kind: K, jobs: Array<{ data: JobInput<K>; delay?: number }>): Promise<void> {
    if (!jobs.length) return;
    const def = JOB_KINDS[kind];
    const cell = this.cellOf(jobs[0]!.data as { runId: string });
    const bulk = jobs.map(({ data, delay }) => {
      const parsed = def.schema.parse({ ...data, kind }) as never;
      const opts: JobsOptions = { ...def.options, jobId: def.id(parsed), ...(delay ? { delay } : {}) };
      return { name: def.name(parsed), data: parsed, opts };
    });
    const queue = this.queue(def.queue, cell);
    if (bulk.length === 1) await queue.add(bulk[0]!.name, bulk[0]!.data, bulk[0]!.opts);
    else await queue.addBulk(bulk);
  }

  /** Removes a waiting or delayed job; a running job cannot be removed. */
  async remove<K extends JobKind>(kind: K, data: JobInput<K>): Promise<void> {
    const def = JOB_KINDS[kind];
    await this.queue(def.queue, this.cellOf(data as { runId: string })).remove(
      (def.id as unknown as (d: JobInput<K>) => string)(data),
    );
  }

  /**
   * Wakes the delayed job of a call that waits (an answer came, or its sub-runs ended); false if
   * it was not delayed (awake already: it reads what it waits for itself; or gone). Of two
   * concurrent promotes one wins.
   */
  async promoteToolCall(ref: ToolCallRef): Promise<boolean> {
    // Promoting needs only the job's id (the script checks its state): no read of the job first.
    const job = new Job(this.queue(QUEUES.tool, this.cellOf(ref)), 'wake', {}, {}, toolCallJobId(ref));
    try {
      await job.promote();
      return true;
    } catch (err) {
      // Awake already, done, or not added yet (see RunActions.wakeAnsweredEarly).
      if (/not in the delayed state|does not exist|Missing key/i.test((err as Error).message)) return false;
      throw err;
    }
  }

  async close(): Promise<void> {
    for (const q of this.queues.values()) await q.close().catch(() => {});
  }
}

import { FlowProducer, Job, Queue, type FlowJob, type Telemetry } from 'bullmq';
import type { RedisClient } from '../redis.js';
import type { Logger } from 'pino';
import { quietConnectionErrors } from '../redis.js';
import {
  JOB_KINDS,
  QUEUES,
  jobId,
  type JobData,
  type JobKind,
  type QueueName,
  type ToolCallJob,
  type ToolCallRef,
} from './catalog.js';
import { cellList, cellOf, cellPrefix, cellQueueName } from './cells.js';

/** The job a new job reports to (BullMQ's `parent`): it waits for this one to end. */
export interface ParentJob {
  id: string;
  queue: string;
}

/** A job to add in a flow: its kind, data and (for a parent) its children. */
export interface FlowNode<K extends JobKind = JobKind> {
  kind: K;
  data: JobData<K>;
  parent?: ParentJob;
  children?: FlowNode[];
  /** Held back this long (ms) unless promoted first; its parent waits meanwhile. */
  delay?: number;
}

/**
 * The producer side of the job catalog: adds jobs of a kind with their id, name and options,
 * parsed against their schema, so that no job carries a field its schema does not know, to
 * the queues of the cell of the job's run. Owns its Queue and FlowProducer objects (made on
 * first use) and closes them; the connection is its caller's.
 */
export class JobQueues {
  private readonly queues = new Map<string, Queue>();
  private readonly flows = new Map<number, FlowProducer>();
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

  async enqueue<K extends JobKind>(kind: K, data: JobData<K>, opts: { parent?: ParentJob } = {}): Promise<void> {
    const cell = this.cellOf(data);
    const { name, data: parsed, opts: jobOpts } = this.node({ kind, data, parent: opts.parent }, cell);
    await this.queue(JOB_KINDS[kind].queue, cell).add(name, parsed, jobOpts);
  }

  /** Adds a parent and its children at once (BullMQ releases the parent when the last child ends); all in the root's run's cell. */
  async addFlow(root: FlowNode): Promise<void> {
    const cell = this.cellOf(root.data);
    let flow = this.flows.get(cell);
    if (!flow) {
      flow = quietConnectionErrors(
        new FlowProducer({
          connection: this.opts.connection,
          prefix: cellPrefix(this.opts.prefix, cell),
          telemetry: this.opts.telemetry,
        }),
        this.opts.logger,
        'flow producer',
      );
      this.flows.set(cell, flow);
    }
    await flow.add(this.node(root, cell));
  }

  /** Removes a waiting job (and its children); a running job cannot be removed. */
  async remove<K extends JobKind>(kind: K, data: JobData<K>): Promise<void> {
    await this.queue(JOB_KINDS[kind].queue, this.cellOf(data)).remove(jobId(kind, data), { removeChildren: true });
  }

  /**
   * Wakes a delayed tool-call job now (an answer came); false if it was not delayed (awake
   * already: it reads the decision itself; or gone). Of two concurrent promotes one wins.
   */
  async promoteToolCall(ref: ToolCallRef): Promise<boolean> {
    // Promoting needs only the job's id (the script checks its state): no read of the job first.
    const job = new Job(
      this.queue(QUEUES.tool, this.cellOf(ref)),
      JOB_KINDS.toolCall.name(ref as ToolCallJob),
      {},
      {},
      jobId('toolCall', ref as ToolCallJob),
    );
    try {
      await job.promote();
      return true;
    } catch (err) {
      // Awake already (it reads the decision itself), done, or not added yet (see wakeAnsweredEarly).
      if (/not in the delayed state|does not exist|Missing key/i.test((err as Error).message)) return false;
      throw err;
    }
  }

  private node(n: FlowNode, cell: number): FlowJob {
    const def = JOB_KINDS[n.kind];
    const data = def.schema.parse(n.data) as never;
    return {
      name: def.name(data),
      queueName: cellQueueName(def.queue, cell, this.cells),
      data,
      // A child whose parent is released without it (it failed for good) must not hold it.
      opts: {
        ...def.options,
        jobId: def.id(data),
        ...(n.parent ? { parent: n.parent, ignoreDependencyOnFailure: true } : {}),
        ...(n.delay ? { delay: n.delay } : {}),
      },
      ...(n.children ? { children: n.children.map((c) => this.node(c, cell)) } : {}),
    };
  }

  async close(): Promise<void> {
    for (const q of this.queues.values()) await q.close().catch(() => {});
    for (const f of this.flows.values()) await f.close().catch(() => {});
  }
}

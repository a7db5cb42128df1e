import { FlowProducer, Queue, type FlowJob, type Telemetry } from 'bullmq';
import type { RedisClient } from '../redis.js';
import type { Logger } from 'pino';
import { quietConnectionErrors } from '../redis.js';
import { JOB_KINDS, QUEUES, jobId, type JobData, type JobKind, type QueueName } from './catalog.js';

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
}

/**
 * The producer side of the job catalog: adds jobs of a kind with their id, name and options,
 * parsed against their schema, so that no job carries a field its schema does not know. Owns
 * its Queue and FlowProducer objects (made on first use) and closes them; the connection is
 * its caller's.
 */
export class JobQueues {
  private readonly queues = new Map<QueueName, Queue>();
  private flowProducer?: FlowProducer;

  constructor(private readonly opts: { connection: RedisClient; prefix: string; logger: Logger; telemetry?: Telemetry }) {}

  queue(name: QueueName): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = quietConnectionErrors(new Queue(name, { connection: this.opts.connection, prefix: this.opts.prefix, telemetry: this.opts.telemetry }), this.opts.logger, `${name} queue`);
      this.queues.set(name, q);
    }
    return q;
  }

  /** Every queue (for the dashboard and the queue-depth metric). */
  all(): Queue[] {
    return Object.values(QUEUES).map((name) => this.queue(name));
  }

  async enqueue<K extends JobKind>(kind: K, data: JobData<K>, opts: { parent?: ParentJob } = {}): Promise<void> {
    const { name, queueName, data: parsed, opts: jobOpts } = this.node({ kind, data, parent: opts.parent });
    await this.queue(queueName as QueueName).add(name, parsed, jobOpts);
  }

  /** Adds a parent and its children at once (BullMQ releases the parent when the last child ends). */
  async addFlow(root: FlowNode): Promise<void> {
    this.flowProducer ??= quietConnectionErrors(new FlowProducer({ connection: this.opts.connection, prefix: this.opts.prefix, telemetry: this.opts.telemetry }), this.opts.logger, 'flow producer');
    await this.flowProducer.add(this.node(root));
  }

  /** Removes a waiting job (and its children); a running job cannot be removed. */
  async remove<K extends JobKind>(kind: K, data: JobData<K>): Promise<void> {
    await this.queue(JOB_KINDS[kind].queue).remove(jobId(kind, data), { removeChildren: true });
  }

  private node(n: FlowNode): FlowJob {
    const def = JOB_KINDS[n.kind];
    const data = def.schema.parse(n.data) as never;
    return {
      name: def.name(data),
      queueName: def.queue,
      data,
      // A child whose parent is released without it (it failed for good) must not hold it.
      opts: { ...def.options, jobId: def.id(data), ...(n.parent ? { parent: n.parent, ignoreDependencyOnFailure: true } : {}) },
      ...(n.children ? { children: n.children.map((c) => this.node(c)) } : {}),
    };
  }

  async close(): Promise<void> {
    for (const q of this.queues.values()) await q.close().catch(() => {});
    await this.flowProducer?.close().catch(() => {});
  }
}

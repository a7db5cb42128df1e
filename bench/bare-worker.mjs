#!/usr/bin/env node
// The bare-BullMQ baseline: the same job graph as an agentq run (a turn job per model step; a
// turn with tool calls adds a FlowProducer flow whose parent is the next turn and whose children
// are FANOUT tool jobs), with the same job ids, job options and lock settings, but no-op
// processors: no run store, no model, no MCP. What is left is the queue's own cost.
//
//   ROLE=agent|tool REDIS_URL=… QUEUE_PREFIX=… CONCURRENCY=100 node bench/bare-worker.mjs
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FlowProducer, Worker } from 'bullmq';
import { Redis } from 'ioredis';

const ROOT = join(import.meta.dirname, '..');
const { QUEUES, jobIds, jobNames, jobOptions, workerLockOptions } = await import(pathToFileURL(join(ROOT, 'packages/shared/dist/index.js')).href);

const role = process.env.ROLE;
const prefix = process.env.QUEUE_PREFIX;
const url = process.env.REDIS_URL;
const concurrency = Number(process.env.CONCURRENCY ?? 100);
const rounds = Number(process.env.ROUNDS ?? 3);
const fanout = Number(process.env.FANOUT ?? 3);
const conn = () => new Redis(url, { maxRetriesPerRequest: null });

let worker;
let flow;
if (role === 'agent') {
  flow = new FlowProducer({ connection: conn(), prefix });
  worker = new Worker(
    QUEUES.agent,
    async (job) => {
      const { runId, depth } = job.data;
      if (depth >= rounds) return { outcome: 'final_answer' };
      await flow.add({
        name: jobNames.agentTurn(runId, depth + 1),
        queueName: QUEUES.agent,
        data: { runId, depth: depth + 1 },
        opts: { ...jobOptions.agentTurn, jobId: jobIds.agentTurn(runId, depth + 1) },
        children: Array.from({ length: fanout }, (_, index) => ({
          name: jobNames.toolCall(runId, depth, 'noop__noop'),
          queueName: QUEUES.tool,
          data: { runId, depth, index, toolCallId: `call_${index}`, name: 'noop__noop', arguments: `{"i":${index}}` },
          opts: { ...jobOptions.toolCall, jobId: jobIds.toolCall(runId, depth, index) },
        })),
      });
      return { outcome: 'tool_calls', count: fanout };
    },
    { connection: conn(), prefix, concurrency, ...workerLockOptions },
  );
} else if (role === 'tool') {
  worker = new Worker(QUEUES.tool, async (job) => ({ index: job.data.index }), { connection: conn(), prefix, concurrency, ...workerLockOptions });
} else {
  process.stderr.write('bare-worker: ROLE must be agent or tool\n');
  process.exit(2);
}
worker.on('error', (err) => process.stderr.write(`bare-worker ${role}: ${err.message}\n`));
await worker.waitUntilReady();

const stop = async () => {
  await worker.close();
  await flow?.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

#!/usr/bin/env node
// @ts-check
// The bare-BullMQ baseline: the job graph of a plain agent loop on BullMQ (an agent-turn job per
// model step; a step with tool calls adds a FlowProducer flow whose parent is the next step's job
// and whose children are FANOUT tool jobs, one per call), with agentq's job options and lock
// settings, but no-op processors: no run store, no model, no MCP. What is left is the queue's own
// cost.
//
// With WORK=1 (the "BullMQ loop" baseline) the processors also call the scripted model (with the
// transcript carried in job data) and the MCP server; still no store.
//
//   ROLE=agent|tool REDIS_URL=… QUEUE_PREFIX=… CONCURRENCY=100 node bench/bare-worker.mjs
//   (WORK=1 also needs MODEL_URL and MCP_JSON, the no-op server's entry as in mcp.json)
import { FlowProducer, Worker } from 'bullmq';
import { Redis } from 'ioredis';
// The same ids, names and options as agentq's job catalog.
import { jobIds, jobNames, jobOptions, QUEUES, shared } from './lib/workload.mjs';

/**
 * @typedef {import('openai').OpenAI.ChatCompletionMessageParam} Message
 * @typedef {import('openai').OpenAI.ChatCompletionMessageFunctionToolCall} ToolCall
 * @typedef {{ runId: string, depth: number, model?: string, messages?: Message[] }} TurnData
 * @typedef {{ runId: string, depth: number, index: number, toolCallId: string, name: string, arguments: string }} CallData
 */

const { workerLockOptions, workerEnvSchema } = shared;
// agentq's workers' lock and stall-check settings, from the same variables and defaults.
const lock = workerLockOptions({
  JOB_LOCK_MS: workerEnvSchema.shape.JOB_LOCK_MS.parse(process.env.JOB_LOCK_MS),
  STALLED_INTERVAL_MS: workerEnvSchema.shape.STALLED_INTERVAL_MS.parse(process.env.STALLED_INTERVAL_MS),
});

const role = process.env.ROLE;
const prefix = process.env.QUEUE_PREFIX;
const url = String(process.env.REDIS_URL);
const concurrency = Number(process.env.CONCURRENCY ?? 100);
const rounds = Number(process.env.ROUNDS ?? 3);
const fanout = Number(process.env.FANOUT ?? 3);
const conn = () => new Redis(url, { maxRetriesPerRequest: null });
const work = process.env.WORK === '1';
const parts = work
  ? await (await import('./lib/inprocess-loop.mjs')).connectAgentParts({
      baseURL: String(process.env.MODEL_URL),
      mcp: JSON.parse(String(process.env.MCP_JSON)),
      clientName: `agentq-bench-bare-${role}`,
    })
  : null;
// The agent role needs the tool list only (it was read at connect): no MCP server of its own.
if (parts && role === 'agent') await parts.close();

/**
 * The next step's transcript: the one it carries, its children's results in call order.
 * @param {import('bullmq').Job<TurnData>} job
 * @returns {Promise<Message[]>}
 */
async function transcript(job) {
  /** @type {Message[]} */
  const messages = job.data.messages ?? [{ role: 'user', content: 'benchmark' }];
  if (!job.data.messages) return messages;
  /** @type {Array<{ index: number, content?: string }>} */
  const results = Object.values(await job.getChildrenValues());
  const last = messages.at(-1);
  const calls = last?.role === 'assistant' ? (last.tool_calls ?? []) : [];
  return [
    ...messages,
    ...calls.map((tc, i) => ({
      role: /** @type {const} */ ('tool'),
      tool_call_id: tc.id,
      content: results.find((r) => r.index === i)?.content ?? 'missing',
    })),
  ];
}

/** @type {Worker} */
let worker;
/** @type {FlowProducer | undefined} */
let flowProducer;
if (role === 'agent') {
  const flows = new FlowProducer({ connection: conn(), prefix });
  flowProducer = flows;
  worker = new Worker(
    QUEUES.agent,
    async (/** @type {import('bullmq').Job<TurnData>} */ job) => {
      const { runId, depth } = job.data;
      /** @type {Array<Pick<ToolCall, 'id' | 'function'>>} */
      let calls;
      /** @type {Message[] | undefined} */
      let messages;
      if (parts) {
        messages = await transcript(job);
        const message = await parts.callModel(job.data.model ?? 'bench', messages);
        messages.push(message);
        calls = message.tool_calls ?? [];
      } else {
        calls =
          depth >= rounds
            ? []
            : Array.from({ length: fanout }, (_, index) => ({
                id: `call_${index}`,
                function: { name: 'noop__noop', arguments: `{"i":${index}}` },
              }));
      }
      if (!calls.length) return { outcome: 'final_answer' };
      await flows.add({
        name: jobNames.agentTurn(runId, depth + 1),
        queueName: QUEUES.agent,
        data: { runId, depth: depth + 1, ...(work ? { messages, model: job.data.model } : {}) },
        opts: { ...jobOptions.agentTurn, jobId: jobIds.agentTurn(runId, depth + 1) },
        children: calls.map((tc, index) => ({
          name: jobNames.toolCall(runId, depth, tc.function.name),
          queueName: QUEUES.tool,
          data: { runId, depth, index, toolCallId: tc.id, name: tc.function.name, arguments: tc.function.arguments },
          opts: { ...jobOptions.toolCall, jobId: jobIds.toolCall(runId, depth, index) },
        })),
      });
      return { outcome: 'tool_calls', count: calls.length };
    },
    { connection: conn(), prefix, concurrency, ...lock },
  );
} else if (role === 'tool') {
  const tool = parts
    ? async (/** @type {import('bullmq').Job<CallData>} */ job) => ({
        index: job.data.index,
        content: await parts.callTool({
          id: job.data.toolCallId,
          type: 'function',
          function: { name: job.data.name, arguments: job.data.arguments },
        }),
      })
    : async (/** @type {import('bullmq').Job<CallData>} */ job) => ({ index: job.data.index });
  worker = new Worker(QUEUES.tool, tool, { connection: conn(), prefix, concurrency, ...lock });
} else {
  process.stderr.write('bare-worker: ROLE must be agent or tool\n');
  process.exit(2);
}
worker.on('error', (err) => process.stderr.write(`bare-worker ${role}: ${err.message}\n`));
await worker.waitUntilReady();

const stop = async () => {
  await worker.close();
  await flowProducer?.close();
  if (role === 'tool') await parts?.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

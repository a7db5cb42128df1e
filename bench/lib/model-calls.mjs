// @ts-check
// A child process of bench/model-call.mjs: makes `calls` streamed chat completions as the
// agent-worker makes them (its callModel: the openai SDK's request, its own reading of the event
// stream), `inFlight` at a time, with the HTTP client `client` (`fetch`: the platform's, the
// SDK's default; `node`: the agent-worker's model-http.ts), after a warm-up; prints its own CPU
// per call, the wall time and its peak RSS as one line of JSON.
//   node bench/lib/model-calls.mjs <baseURL> <model> <client> <inFlight> <calls>
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { ROOT } from './workload.mjs';

const [baseURL, model, client] = process.argv.slice(2);
const [inFlight, calls] = process.argv.slice(5).map(Number);
const { modelHttpFetch } = await import(pathToFileURL(join(ROOT, 'services/agent-worker/dist/model-http.js')).href);
const { callModel } = await import(pathToFileURL(join(ROOT, 'services/agent-worker/dist/model-step.js')).href);
const fetch = client === 'node' ? modelHttpFetch({ maxResponseBytes: 64 << 20, maxFreeSockets: inFlight }) : undefined;
const openai = new OpenAI({ baseURL, apiKey: 'bench', maxRetries: 0, ...(fetch ? { fetch } : {}) });
// The bench model calls the first tool it is offered, three at once, then answers (llm-server.mjs).
/** @type {import('openai').OpenAI.ChatCompletionTool[]} */
const tools = [
  {
    type: 'function',
    function: { name: 'noop__echo', description: 'echo', parameters: { type: 'object', properties: {} } },
  },
];

async function one() {
  // As the agent-worker calls: streamed, with usage, a signal and deadlines of its own.
  const { message } = await callModel(openai, {
    model,
    messages: [{ role: 'user', content: 'hi' }],
    tools,
    toolChoice: 'auto',
    signal: new AbortController().signal,
    timeoutMs: 60_000,
    idleTimeoutMs: 60_000,
  });
  if (!message.tool_calls?.length) throw new Error('an answer without its tool calls');
}

/** @param {number} n calls, `inFlight` at a time */
async function run(n) {
  let started = 0;
  const caller = async () => {
    while (started < n) {
      started++;
      await one();
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, n) }, caller));
}

await run(Math.min(calls, Math.max(inFlight, 200)));
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await run(calls);
const cpu = process.cpuUsage(cpu0);
const wallMs = performance.now() - t0;
fetch?.close();
process.stdout.write(
  `${JSON.stringify({ cpuUsPerCall: (cpu.user + cpu.system) / calls, wallMs, peakRssMB: process.resourceUsage().maxRSS / 1024 })}\n`,
);

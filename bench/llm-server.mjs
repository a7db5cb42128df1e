#!/usr/bin/env node
// @ts-check
// The benchmark's model: the project's scripted OpenAI-compatible server (packages/scripted-llm)
// in a process of its own, playing an agent that makes ROUNDS rounds of FANOUT parallel calls
// of the first tool it is offered, then answers. Every reply is delayed by LATENCY_MS, plus N ms
// when the request's model is named `…-<N>ms` (so one server serves every latency).
//
//   LATENCY_MS=0 ROUNDS=3 FANOUT=3 node bench/llm-server.mjs   → prints {"baseURL": …}
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const ROOT = join(import.meta.dirname, '..');
/** @type {typeof import('@agentq/scripted-llm')} */
const { startScriptedLlm } = await import(pathToFileURL(join(ROOT, 'packages/scripted-llm/dist/index.js')).href);

const latencyMs = Number(process.env.LATENCY_MS ?? 0);
const rounds = Number(process.env.ROUNDS ?? 3);
const fanout = Number(process.env.FANOUT ?? 3);

const llm = await startScriptedLlm({
  latencyMs,
  handler: (req) => {
    // The scripted server keeps every request body; a benchmark sends hundreds of thousands.
    llm.requests.length = 0;
    const delayMs = Number(/-(\d+)ms$/.exec(req.model ?? '')?.[1] ?? 0);
    const done = req.messages.filter((m) => m?.role === 'assistant' && m.tool_calls?.length).length;
    const tool = req.tools?.[0]?.function?.name;
    if (!tool || done >= rounds || req.tool_choice === 'none')
      return { content: 'done', delayMs, usage: { prompt_tokens: 10, completion_tokens: 1 } };
    return {
      tool_calls: Array.from({ length: fanout }, (_, i) => ({ name: tool, arguments: { i } })),
      delayMs,
      usage: { prompt_tokens: 10, completion_tokens: 10 },
    };
  },
});
process.stdout.write(`${JSON.stringify({ baseURL: llm.baseURL })}\n`);

const stop = () => llm.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

import OpenAI from 'openai';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, startTracing, withJobSpan, type AgentqMetrics, type Tracing } from '@agentq/shared/infra';
import { startScriptedLlm, type Reply, type ScriptedLlm } from '@agentq/scripted-llm';
import { callModel, type ModelRequest } from './model-step.js';
import { observeModelCalls } from './model-telemetry.js';

const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let llm: ScriptedLlm;
let metrics: AgentqMetrics;
let client: OpenAI;
const replies: Reply[] = [];

beforeAll(async () => {
  tracing = startTracing({ service: 'test', spanProcessors: [new SimpleSpanProcessor({ exporter })] })!;
  llm = await startScriptedLlm({ handler: () => replies.shift() ?? { content: 'default' } });
  metrics = createMetrics({ service: 'agent-worker', processMetrics: false });
  client = observeModelCalls(new OpenAI({ baseURL: llm.baseURL, apiKey: 'k', maxRetries: 0 }), metrics);
});
afterAll(async () => {
  await llm?.close();
  await tracing?.shutdown();
});

const req = (model: string, over: Partial<ModelRequest> = {}): ModelRequest => ({
  model,
  messages: [{ role: 'user', content: 'hi' }],
  tools: [{ type: 'function', function: { name: 'crm__x', description: 'x', parameters: { type: 'object' } } }],
  toolChoice: 'auto',
  timeoutMs: 5000,
  idleTimeoutMs: 5000,
  ...over,
});

async function series(name: string) {
  const m = (await metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? []) as Array<{ labels: Record<string, string>; value: number; metricName?: string }>;
}

describe("observeModelCalls (callModel's calls observed)", () => {
  it("records a streamed call as a chat span (a child of the step's) and in the model metrics", async () => {
    replies.push({
      tool_calls: [{ name: 'crm__x', arguments: { a: 1 } }],
      usage: { prompt_tokens: 21, completion_tokens: 4 },
    });
    const response = await withJobSpan('agent_step', { carrier: {}, attributes: {} }, () =>
      callModel(client, req('model-a')),
    );
    expect(response.message.tool_calls?.[0].function).toEqual({ name: 'crm__x', arguments: '{"a":1}' });
    expect(response.usage).toMatchObject({ prompt_tokens: 21, completion_tokens: 4 });

    const step = exporter.getFinishedSpans().find((s) => s.name === 'agent_step')!;
    const chat = exporter.getFinishedSpans().find((s) => s.name === 'chat model-a')!;
    expect(chat.parentSpanContext?.spanId).toBe(step.spanContext().spanId);
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'model-a',
      'gen_ai.usage.input_tokens': 21,
      'gen_ai.usage.output_tokens': 4,
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'server.address': '127.0.0.1',
    });
    expect(chat.kind).toBe(2); // CLIENT
    const tokens = await series('agentq_model_tokens_total');
    expect(tokens.map((t) => [t.labels.model, t.labels.type, t.value])).toEqual([
      ['model-a', 'input', 21],
      ['model-a', 'output', 4],
    ]);
    const count = (await series('agentq_model_call_duration_seconds')).find(
      (v) => v.metricName?.endsWith('_count') && v.labels.model === 'model-a',
    );
    expect(count).toMatchObject({ labels: { outcome: 'ok' }, value: 1 });
  });

  it('records a failed call as an error span and outcome="error"', async () => {
    replies.push({ error: { status: 400, message: 'bad request' } });
    await expect(callModel(client, req('model-b'))).rejects.toThrow(/rejected the request/);
    const chat = exporter.getFinishedSpans().find((s) => s.name === 'chat model-b')!;
    expect(chat.status.code).toBe(2);
    const count = (await series('agentq_model_call_duration_seconds')).find(
      (v) => v.metricName?.endsWith('_count') && v.labels.model === 'model-b',
    );
    expect(count).toMatchObject({ labels: { outcome: 'error' }, value: 1 });
  });

  it('records a call aborted mid-stream as outcome="aborted"', async () => {
    replies.push({ hang: true });
    const ctrl = new AbortController();
    setTimeout(() => ctrl.abort(), 50);
    await expect(callModel(client, req('model-c', { signal: ctrl.signal }))).rejects.toThrow();
    const count = (await series('agentq_model_call_duration_seconds')).find(
      (v) => v.metricName?.endsWith('_count') && v.labels.model === 'model-c',
    );
    expect(count).toMatchObject({ labels: { outcome: 'aborted' }, value: 1 });
  });
});

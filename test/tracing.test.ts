import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { startTracing, type Tracing } from '@agentq/shared/infra';
import type { ChatRequest, Handler } from '@agentq/scripted-llm';
import { startStack, type Stack } from './fixtures/services.js';
import { waitFor } from './fixtures/wait.js';

// One tracer provider for the three services started in this process, spans kept in memory.
const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let stack: Stack;

const toolMessages = (req: ChatRequest) => req.messages.filter((m) => m.role === 'tool');
const user = 'Find Bob and update his company to EPAM';
const handler: Handler = (req) => {
  const round = req.messages.filter((m) => m.role === 'assistant').length;
  const first = req.messages.find((m) => m.role === 'user')?.content as string;
  if (first.startsWith('Capital of')) return { content: `${first.slice(11)}: known` };
  if (first === 'Ask two children') {
    return round === 0
      ? {
          tool_calls: [{ name: 'agent_query_batch', arguments: { prompts: ['Capital of France', 'Capital of Peru'] } }],
        }
      : { content: 'done' };
  }
  if (round === 0) return { tool_calls: [{ name: 'crm__search_contacts', arguments: { query: 'Bob' } }] };
  const last = toolMessages(req).at(-1)!.content as string;
  if (round === 1) return { tool_calls: [{ name: 'crm__get_contact', arguments: { id: JSON.parse(last)[0].id } }] };
  if (round === 2)
    return { tool_calls: [{ name: 'crm__update_contact', arguments: { id: JSON.parse(last).id, company: 'EPAM' } }] };
  return { content: `Done: ${JSON.parse(last).name} now works at ${JSON.parse(last).company}.` };
};

beforeAll(async () => {
  tracing = startTracing({ service: 'test', spanProcessors: [new SimpleSpanProcessor({ exporter })] })!;
  stack = await startStack({ handler, tracing });
});
afterAll(async () => {
  await stack?.close();
  await tracing?.shutdown();
});

const spanId = (s: ReadableSpan) => s.spanContext().spanId;
const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('tracing', () => {
  it('shows a three-round run as one connected trace rooted at the run', async () => {
    const { id } = await stack.createRun({ input: user });
    const run = await stack.waitForRun(id);
    expect(run).toMatchObject({ status: 'completed', depth: 3 });

    const root = exporter
      .getFinishedSpans()
      .find((s) => s.name === 'invoke_agent' && s.attributes['agentq.run.id'] === id)!;
    expect(root).toBeDefined();
    const traceId = root.spanContext().traceId;
    const ofTrace = () => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
    // Spans end a moment after the run's status is written: wait for BullMQ's last `process` spans.
    const spans = await waitFor(
      () => {
        const all = ofTrace();
        const processed = all.filter((s) => s.instrumentationScope.name === 'bullmq' && s.name.startsWith('process '));
        return processed.length >= 7 && all.filter((s) => s.name === 'agent_step').length === 4 ? all : undefined;
      },
      { what: 'every job span of the run' },
    );

    // Every span of the run (on every service) is in this one trace.
    const aboutRun = exporter.getFinishedSpans().filter((s) => s.attributes['agentq.run.id'] === id);
    expect(aboutRun.length).toBeGreaterThanOrEqual(1 + 4 + 3);
    for (const s of aboutRun) expect(s.spanContext().traceId).toBe(traceId);

    // One tree: the run's span is the only root, and every other span's parent is in the trace.
    const ids = new Set(spans.map(spanId));
    expect(parentId(root)).toBeUndefined();
    for (const s of spans) {
      if (s === root) continue;
      expect(ids.has(parentId(s)!), `parent of ${s.name} (${s.instrumentationScope.name}) is in the trace`).toBe(true);
    }
    const byId = new Map(spans.map((s) => [spanId(s), s]));
    const ancestors = (s: ReadableSpan) => {
      const chain: ReadableSpan[] = [];
      for (let p = byId.get(parentId(s) ?? ''); p; p = byId.get(parentId(p) ?? '')) chain.push(p);
      return chain;
    };
    for (const s of spans) if (s !== root) expect(ancestors(s).at(-1)).toBe(root);

    // A span per step, children of the run.
    const steps = spans
      .filter((s) => s.name === 'agent_step')
      .sort((a, b) => Number(a.attributes['agentq.run.depth']) - Number(b.attributes['agentq.run.depth']));
    expect(steps.map((t) => t.attributes['agentq.run.depth'])).toEqual([0, 1, 2, 3]);
    for (const t of steps) expect(parentId(t)).toBe(spanId(root));
    expect(steps.map((t) => t.attributes['agentq.outcome'])).toEqual([
      'tool_calls',
      'tool_calls',
      'tool_calls',
      'final_answer',
    ]);

    // A span per model call, child of its step, with the GenAI attributes.
    const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats).toHaveLength(4);
    for (const c of chats) {
      expect(c.name).toBe('chat scripted');
      expect(c.attributes['gen_ai.request.model']).toBe('scripted');
      expect(c.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(c.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
      expect(steps.map(spanId)).toContain(parentId(c));
    }
    const reasonOf = (t: ReadableSpan) =>
      chats.find((c) => parentId(c) === spanId(t))!.attributes['gen_ai.response.finish_reasons'];
    expect(steps.map(reasonOf)).toEqual([['tool_calls'], ['tool_calls'], ['tool_calls'], ['stop']]);

    // A span per tool call, child of the step that asked for it.
    const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
    const toolOf = (depth: number) => tools.filter((s) => s.attributes['agentq.run.depth'] === depth);
    expect([0, 1, 2].map((d) => toolOf(d).map((s) => s.attributes['gen_ai.tool.name']))).toEqual([
      ['crm__search_contacts'],
      ['crm__get_contact'],
      ['crm__update_contact'],
    ]);
    for (const d of [0, 1, 2]) {
      const [t] = toolOf(d);
      expect(t.name).toBe(`execute_tool ${t.attributes['gen_ai.tool.name']}`);
      expect(t.attributes['gen_ai.tool.call.id']).toEqual(expect.any(String));
      expect(t.attributes['agentq.outcome']).toBe('ok');
      expect(parentId(t)).toBe(spanId(steps[d]));
    }

    // BullMQ's own spans (bullmq-otel) are part of the same tree.
    const bullmq = spans.filter((s) => s.instrumentationScope.name === 'bullmq').map((s) => s.name);
    expect(bullmq).toContain('process agent');
    expect(bullmq).toContain('process tool');
    expect(bullmq.some((n) => n.startsWith('add agent.'))).toBe(true);
    // Each round is one job, added alone (no flow), which adds the next step.
    expect(bullmq.some((n) => n.startsWith('add tool.'))).toBe(true);
    expect(bullmq).not.toContain('addFlow agent');
  });

  it("hangs a sub-run's trace under the agent_query call that started it", async () => {
    const { id } = await stack.createRun({ input: 'Ask two children', subagents: { enabled: true } });
    expect((await stack.waitForRun(id)).status).toBe('completed');
    const children = (
      (await (await stack.request(`/v1/runs/${id}/children`)).json()) as { data: Array<{ id: string }> }
    ).data.map((c) => c.id);
    expect(children).toHaveLength(2);
    const spans = await waitFor(
      () => {
        const all = exporter.getFinishedSpans();
        return children.every((c: string) =>
          all.some((s) => s.name === 'agent_step' && s.attributes['agentq.run.id'] === c),
        )
          ? all
          : undefined;
      },
      { what: "the children's steps" },
    );
    const root = spans.find((s) => s.name === 'invoke_agent' && s.attributes['agentq.run.id'] === id)!;
    const call = spans.find(
      (s) => s.name === 'execute_tool agent_query_batch' && s.attributes['agentq.run.id'] === id,
    )!;
    expect(call.spanContext().traceId).toBe(root.spanContext().traceId);
    for (const c of children) {
      const childRun = spans.find((s) => s.name === 'invoke_agent' && s.attributes['agentq.run.id'] === c)!;
      // The first attempt of the tool call (which started the children and then waited) is the parent.
      expect(spans.filter((s) => s.name === 'execute_tool agent_query_batch').map(spanId)).toContain(
        parentId(childRun),
      );
      expect(childRun.spanContext().traceId).toBe(root.spanContext().traceId);
      const step = spans.find((s) => s.name === 'agent_step' && s.attributes['agentq.run.id'] === c)!;
      expect(parentId(step)).toBe(spanId(childRun));
    }
  });
});

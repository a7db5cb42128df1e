import { Writable } from 'node:stream';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { activeTrace, inTrace, nextStepTrace, startChatSpan, startRunTrace, withJobSpan } from './run-tracing.js';
import { otlpTracesUrl, startTracing, type Tracing } from './tracing.js';

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('registers nothing and leaves no trace context in job data', async () => {
    expect(startTracing({ service: 'test' })).toBeUndefined();
    expect(startRunTrace('run_1', 'gpt')).toEqual({});
    const seen = await withJobSpan('agent_step', { carrier: {}, attributes: {} }, async () => ({
      next: nextStepTrace(),
      tools: activeTrace(),
    }));
    expect(seen).toEqual({ next: {}, tools: {} });
  });

  it('derives the OTLP/HTTP traces URL from the base endpoint', () => {
    expect(otlpTracesUrl('http://collector:4318')).toBe('http://collector:4318/v1/traces');
    expect(otlpTracesUrl('https://otel.example.com/otlp/')).toBe('https://otel.example.com/otlp/v1/traces');
  });
});

describe('tracing on', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  afterAll(() => tracing?.shutdown());
  const spans = () => exporter.getFinishedSpans();

  it('joins jobs to the run through traceparent: steps under the run, tool calls under their step', async () => {
    tracing = startTracing({ service: 'test', spanProcessors: [new SimpleSpanProcessor({ exporter })] })!;
    expect(tracing.bullmq.tracer).toBeDefined();
    const run = startRunTrace('run_1', 'gpt-x');
    expect(run.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, runSpanId] = run.traceparent!.split('-');

    // What fanOut puts in the next step's and the tool calls' job data.
    const { next, tool } = await withJobSpan(
      'agent_step',
      { carrier: run, attributes: { 'agentq.run.depth': 0 } },
      async () => {
        startChatSpan('gpt-x').end();
        return { next: nextStepTrace(), tool: activeTrace() };
      },
    );
    expect(next).toEqual(run);
    const step = spans().find((s) => s.name === 'agent_step')!;
    expect(tool.traceparent).toBe(`00-${traceId}-${step.spanContext().spanId}-01`);
    expect(step.parentSpanContext?.spanId).toBe(runSpanId);
    const chat = spans().find((s) => s.name === 'chat gpt-x')!;
    expect(chat.parentSpanContext?.spanId).toBe(step.spanContext().spanId);
    expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-x' });

    await withJobSpan('execute_tool crm__x', { carrier: tool, attributes: {} }, async () => undefined);
    const toolSpan = spans().find((s) => s.name === 'execute_tool crm__x')!;
    expect(toolSpan.spanContext().traceId).toBe(traceId);
    expect(toolSpan.parentSpanContext?.spanId).toBe(step.spanContext().spanId);
  });

  it("runs code in a job's trace context, so spans started there join the run", async () => {
    const run = startRunTrace('run_2', 'gpt-x');
    inTrace(run, () => startChatSpan('inside').end());
    expect(
      spans()
        .find((s) => s.name === 'chat inside')!
        .spanContext().traceId,
    ).toBe(run.traceparent!.split('-')[1]);
  });

  it('starts a trace at the step for a run created while tracing was off', async () => {
    const next = await withJobSpan('agent_step', { carrier: {}, attributes: { 'agentq.run.id': 'run_3' } }, async () =>
      nextStepTrace(),
    );
    const step = spans().find((s) => s.name === 'agent_step' && s.attributes['agentq.run.id'] === 'run_3')!;
    expect(next.traceparent).toContain(step.spanContext().spanId);
  });

  it("marks failures, but not BullMQ's waiting-for-children", async () => {
    await expect(
      withJobSpan('failing', { carrier: {}, attributes: {} }, async () =>
        Promise.reject(Object.assign(new Error('boom'), { code: 'model_unavailable' })),
      ),
    ).rejects.toThrow('boom');
    const failed = spans().find((s) => s.name === 'failing')!;
    expect(failed.status).toMatchObject({ code: 2, message: 'boom' });
    expect(failed.attributes['error.type']).toBe('model_unavailable');

    const waiting = Object.assign(new Error('waiting'), { name: 'WaitingChildrenError' });
    await expect(
      withJobSpan('waiting', { carrier: {}, attributes: {} }, async () => Promise.reject(waiting)),
    ).rejects.toBe(waiting);
    const w = spans().find((s) => s.name === 'waiting')!;
    expect(w.status.code).toBe(0);
    expect(w.events.map((e) => e.name)).toEqual(['WaitingChildrenError']);
  });

  it("drops BullMQ's housekeeping traces (stalled-job checks), keeps everything else", () => {
    const tracer = trace.getTracer('bullmq');
    tracer.startSpan('moveStalledJobsToWait agent').end();
    tracer.startSpan('process agent').end();
    const names = spans().map((s) => s.name);
    expect(names).toContain('process agent');
    expect(names).not.toContain('moveStalledJobsToWait agent');
  });

  it('puts trace_id and span_id on the log lines written inside a span', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const destination = new Writable({
      write(chunk, _e, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    const logger = createLogger({ service: 'test', destination });
    await withJobSpan('logged', { carrier: {}, attributes: {} }, async () => logger.info('inside'));
    const span = spans().find((s) => s.name === 'logged')!;
    expect(lines[0]).toMatchObject({ trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId });
  });
});

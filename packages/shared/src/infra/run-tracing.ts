import {
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';

export type { Span, Attributes };

/**
 * The GenAI semantic-convention attributes agentq sets. Copied rather than imported from
 * `@opentelemetry/semantic-conventions/incubating`, as that package advises for incubating names.
 */
export const GEN_AI = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  responseFinishReasons: 'gen_ai.response.finish_reasons',
  usageInputTokens: 'gen_ai.usage.input_tokens',
  usageOutputTokens: 'gen_ai.usage.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  conversationId: 'gen_ai.conversation.id',
} as const;

/** agentq's own span attributes. */
export const AGENTQ = {
  runId: 'agentq.run.id',
  rootRunId: 'agentq.run.root_id',
  depth: 'agentq.run.depth',
  jobId: 'agentq.job.id',
  attempt: 'agentq.job.attempt',
  outcome: 'agentq.outcome',
} as const;

/** A W3C trace context as carried in job data. */
export interface TraceCarrier {
  traceparent?: string;
}

const tracer = () => trace.getTracer('agentq');
// The trace context of the run a step belongs to, for the jobs that step adds.
const RUN_TRACE = createContextKey('agentq.run-trace');

function inject(ctx: Context): TraceCarrier {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent ? { traceparent: carrier.traceparent } : {};
}

function extract(carrier: TraceCarrier | undefined): Context {
  return carrier?.traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent: carrier.traceparent }) : ROOT_CONTEXT;
}

/**
 * Opens the trace of a new run: an `invoke_agent` span (a child of the active span: the
 * `agent_query` tool call for a sub-run), ended at once since a run outlives the process
 * that creates it. Returns its trace context for the run's first job, or `{}` when tracing is off.
 */
export function startRunTrace(runId: string, model: string): TraceCarrier {
  const span = tracer().startSpan('invoke_agent', {
    kind: SpanKind.INTERNAL,
    attributes: {
      [GEN_AI.operationName]: 'invoke_agent',
      [GEN_AI.requestModel]: model,
      [GEN_AI.conversationId]: runId,
      [AGENTQ.runId]: runId,
    },
  });
  const carrier = inject(trace.setSpan(context.active(), span));
  span.end();
  return carrier;
}

/** Runs `fn` in the trace context of `carrier` (so that BullMQ's own spans join the run's trace). */
export function inTrace<T>(carrier: TraceCarrier, fn: () => T): T {
  return carrier.traceparent ? context.with(extract(carrier), fn) : fn();
}

/** The trace context for the next step of the run whose step is running now. */
export function nextStepTrace(): TraceCarrier {
  const carrier = context.active().getValue(RUN_TRACE) as TraceCarrier | undefined;
  return carrier?.traceparent ? { traceparent: carrier.traceparent } : {};
}

/** The trace context of the active span (the step), for the tool calls it fans out. */
export function activeTrace(): TraceCarrier {
  return inject(context.active());
}

// BullMQ's control-flow errors end a job attempt without it having failed.
const NOT_FAILURES = new Set(['WaitingChildrenError', 'DelayedError', 'WaitingError', 'RateLimitError']);

/** Marks a span failed with `err`, unless it is one of BullMQ's control-flow errors. */
export function failSpan(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  if (NOT_FAILURES.has(e.name)) {
    span.addEvent(e.name);
    return;
  }
  span.recordException(e);
  span.setAttribute('error.type', (e as { code?: unknown }).code ? String((e as { code?: unknown }).code) : e.name);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/**
 * Runs one job's work in a span whose parent is the trace context in the job's data, with
 * that span active (so the spans and jobs `fn` starts are its children). `runTrace` is what
 * `nextStepTrace()` returns inside `fn`; by default the job's own trace context.
 */
export async function withJobSpan<T>(
  name: string,
  opts: { carrier: TraceCarrier; attributes: Attributes; runTrace?: TraceCarrier; kind?: SpanKind },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = extract(opts.carrier);
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  let ctx = trace.setSpan(parent, span);
  // A run with no trace context yet (created while tracing was off) is traced from this span on.
  ctx = ctx.setValue(RUN_TRACE, opts.runTrace ?? (opts.carrier.traceparent ? opts.carrier : inject(ctx)));
  try {
    return await context.with(ctx, () => fn(span));
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Starts a client span for a model call, a child of the active span (the step); the caller ends it. */
export function startChatSpan(model: string, attributes: Attributes = {}): Span {
  return tracer().startSpan(`chat ${model}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      [GEN_AI.operationName]: 'chat',
      [GEN_AI.providerName]: 'openai',
      [GEN_AI.requestModel]: model,
      ...attributes,
    },
  });
}

export { SpanStatusCode };

import { context, propagation, ROOT_CONTEXT, trace, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  TracerProvider,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';

/** Tracing of one process, once started: what BullMQ needs, and a flush-and-stop. */
export interface Tracing {
  /** BullMQ's own spans (bullmq-otel), for the `telemetry` option of queues, flows and workers. */
  bullmq: Telemetry;
  /** Exports what is buffered and unregisters the globals. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** The `service.name` of the spans is `agentq-<service>`. */
  service: string;
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: spans go to `<endpoint>/v1/traces` (OTLP over HTTP, protobuf). */
  endpoint?: string;
  /** Replaces the OTLP exporter (tests register an in-memory exporter here). */
  spanProcessors?: SpanProcessor[];
}

/** The OTLP/HTTP traces URL for a base endpoint, as the OTel spec derives it. */
export function otlpTracesUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, '')}/v1/traces`;
}

/**
 * Registers OpenTelemetry for this process (tracer provider, AsyncLocalStorage context, W3C
 * trace-context propagator). Returns undefined, registering nothing, when there is neither an
 * endpoint nor a span processor: tracing is off unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set,
 * and agentq's spans are then the API's no-op spans. The exporter also honours the standard
 * `OTEL_EXPORTER_OTLP_HEADERS` / `_TIMEOUT` / `_COMPRESSION` variables.
 */
export function startTracing(opts: TracingOptions): Tracing | undefined {
  const processors =
    opts.spanProcessors ??
    (opts.endpoint
      ? [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: otlpTracesUrl(opts.endpoint) }) })]
      : []);
  if (processors.length === 0) return undefined;
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: `agentq-${opts.service}` })),
    spanProcessors: processors.map((p) => new WithoutHousekeeping(p)),
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    bullmq: bullmqTelemetry(),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

// BullMQ traces its housekeeping (a stalled-jobs check every few seconds per worker) as
// traces of their own: one every few seconds per process, and nothing to do with any run.
const HOUSEKEEPING = /^(moveStalledJobsToWait|startStalledCheckTimer) /;

/** Passes every span on to `inner` but BullMQ's housekeeping traces. */
export class WithoutHousekeeping implements SpanProcessor {
  constructor(private readonly inner: SpanProcessor) {}
  onStart(span: Span, parentContext: Context): void {
    this.inner.onStart(span, parentContext);
  }
  onEnding(span: Span): void {
    this.inner.onEnding?.(span);
  }
  onEnd(span: ReadableSpan): void {
    if (!span.parentSpanContext && HOUSEKEEPING.test(span.name)) return;
    this.inner.onEnd(span);
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/**
 * bullmq-otel's telemetry, with the `root()` of BullMQ's ContextManager that bullmq-otel 2.0
 * lacks: without it BullMQ runs its background loops (stalled-job checks) in whatever context
 * is active, and they could end up inside a run's trace.
 */
export function bullmqTelemetry(): Telemetry {
  const telemetry = new BullMQOtel({ tracerName: 'bullmq' });
  Object.assign(telemetry.contextManager, { root: () => ROOT_CONTEXT });
  return telemetry;
}

/**
 * Traces, by OpenTelemetry: on when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
 * is set, exported by OTLP over HTTP in batches; off otherwise, at no cost: startSpan returns
 * undefined and call sites skip their attributes. A span's parent travels as a W3C `traceparent`
 * string: in an HTTP header from clients and to upstreams, in gRPC metadata, in a field of each call
 * on the long-lived call streams, and in each usage event. Parents are passed explicitly rather than
 * through an async context, so nothing is paid per await.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

export { SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';

/** Options of one span. */
export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent, as a W3C traceparent (`00-<trace id>-<span id>-<flags>`); none or invalid: a new trace. */
  parent?: string;
}

/** A service's tracing. */
export interface Tracing {
  readonly enabled: boolean;
  /** Starts a span, or returns undefined when tracing is off. End it with span.end(). */
  startSpan(name: string, options?: SpanOptions): Span | undefined;
  /** The traceparent that makes a span the parent of work elsewhere; undefined without a span. */
  traceparentOf(span: Span | undefined): string | undefined;
  /** Exports what is left; call on shutdown. */
  shutdown(): Promise<void>;
}

const propagator = new W3CTraceContextPropagator();
const getter = { get: (carrier: Record<string, string>, key: string) => carrier[key], keys: (carrier: Record<string, string>) => Object.keys(carrier) };
const setter = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value;
  },
};

/** What a traceparent looks like (version 00). */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Tracing that records nothing. */
export const NO_TRACING: Tracing = {
  enabled: false,
  startSpan: () => undefined,
  traceparentOf: () => undefined,
  shutdown: async () => undefined,
};

/**
 * The tracing of a service named `service` (the resource's service.name): on when the environment
 * names an OTLP endpoint. OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_SCHEDULE_DELAY and the other standard
 * OTEL_ variables apply.
 */
export function startTracing(service: string, env: Record<string, string | undefined> = process.env): Tracing {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return NO_TRACING;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'service.namespace': 'llm-gateway' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const tracer = provider.getTracer('@gateway/observability');
  return {
    enabled: true,
    startSpan(name, options = {}) {
      const parent =
        options.parent && TRACEPARENT.test(options.parent) ? propagator.extract(ROOT_CONTEXT, { traceparent: options.parent }, getter) : ROOT_CONTEXT;
      return tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent);
    },
    traceparentOf(span) {
      if (!span) return undefined;
      const carrier: Record<string, string> = {};
      propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, setter);
      return carrier.traceparent;
    },
    shutdown: () => provider.shutdown(),
  };
}

/** Ends a span as failed with an error type (OpenTelemetry's `error.type`) and a message. */
export function endWithError(span: Span | undefined, errorType: string, message?: string): void {
  if (!span) return;
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
  span.end();
}

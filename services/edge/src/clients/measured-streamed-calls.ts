/**
 * A StreamedCalls of the edge (to auth, to the executors) with its two metrics: the calls by
 * method and path (`gateway_<service>_calls_total`) and the streams open and taking calls
 * (`gateway_<service>_streams_open`).
 */
import { StreamedCalls, type StreamedCallsOptions, type StreamedMethods } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';

/** What differs between the edge's streamed clients. */
export interface MeasuredStreamedCallsOptions<Methods extends StreamedMethods>
  extends Pick<StreamedCallsOptions<Methods>, 'open' | 'streams' | 'target' | 'unary' | 'cancellable' | 'maxStreamAgeMs' | 'respreadAfterStartMs'> {
  /** The service called, as the metrics name it: `gateway_<service>_calls_total`. */
  service: 'auth' | 'executor';
  /** What one call is, for the metrics' help ("Quota decisions and settlements sent to auth"). */
  calls: string;
  /** What one stream is, for the metrics' help ("Decision streams to auth"). */
  streamsOf: string;
  registry: prometheus.Registry;
  logger: Logger;
}

/** Opens the streams (0: every call unary) and registers the metrics. Close it before the channel. */
export function measuredStreamedCalls<Methods extends StreamedMethods, Streams extends StreamedMethods = Record<never, [unknown, unknown]>>(
  options: MeasuredStreamedCallsOptions<Methods>,
): StreamedCalls<Methods, Streams> {
  const { service, registry, logger } = options;
  // The gauge reads `streamed` (made below) at scrapes only.
  const { calls } = serviceMetrics(registry, {
    calls: metric.counterBy(`gateway_${service}_calls_total`, `${options.calls}, by method and path (stream or unary).`, ['method', 'path']),
    streamsOpen: metric.gauge(`gateway_${service}_streams_open`, `${options.streamsOf} open and taking calls.`, () => streamed.openStreams),
  });
  const streamed = new StreamedCalls<Methods, Streams>({
    open: options.open,
    streams: options.streams,
    target: options.target,
    unary: options.unary,
    cancellable: options.cancellable,
    maxStreamAgeMs: options.maxStreamAgeMs,
    respreadAfterStartMs: options.respreadAfterStartMs,
    onCall: (method, path) => calls.inc({ method, path }),
    onStreamBroken: (error) => logger.warn({ reason: error.reason, service }, 'a call stream broke; its calls in flight failed and it reopens'),
  });
  return streamed;
}

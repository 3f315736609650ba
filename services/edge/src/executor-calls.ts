/**
 * The edge's whole completions, carried on a few long-lived CompleteCalls streams to the executors
 * (a message each way instead of a unary call's HTTP/2 stream, headers and trailers), unary while
 * no stream is open. Each call keeps its deadline, and a call the edge gives up on (its client went
 * away) is cancelled on the executor, which aborts the upstream request.
 */
import { callUnary, type StreamedCalls } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import { measuredStreamedCalls } from './measured-streamed-calls.js';
import type { ExecuteRequest, ExecuteResponseOutput, ExecutorServiceClient } from '@gateway/proto';

/** The calls the edge makes on a CompleteCalls stream, by their names in CompleteCallRequest's oneof. */
export type ExecutorCallMethods = {
  complete: [ExecuteRequest, ExecuteResponseOutput];
};

/** Complete over CompleteCalls streams, each call with its own deadline and signal. */
export type ExecutorCalls = StreamedCalls<ExecutorCallMethods>;

/**
 * Opens `streams` CompleteCalls streams on the executor channel (0: every call unary) and counts
 * each call's path (`gateway_executor_calls_total`) and the open streams
 * (`gateway_executor_streams_open`). With a `dns:///` address the streams are spread round robin
 * over the executors, and each is replaced about every 30 s (the first ones within 3 s of the
 * start) so that new replicas get their share: keep EDGE_EXECUTOR_STREAMS at least the number of
 * executor replicas. Close it before the channel.
 */
export function createExecutorCalls(executor: ExecutorServiceClient, streams: number, registry: prometheus.Registry, logger: Logger): ExecutorCalls {
  return measuredStreamedCalls<ExecutorCallMethods>({
    service: 'executor',
    calls: 'Whole completions sent to an executor',
    streamsOf: 'Completion streams to executors',
    open: () => executor.CompleteCalls(),
    streams,
    cancellable: true,
    // Executors come and go with the load (an autoscaled pool): a new replica gets its share of
    // the streams within about 30 s, and one still connecting at the edge's start within seconds.
    maxStreamAgeMs: 30_000,
    respreadAfterStartMs: 3_000,
    unary: { complete: (request, options) => callUnary(executor, executor.Complete, request, options) },
    registry,
    logger,
  });
}

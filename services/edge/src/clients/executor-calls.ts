/**
 * The edge's completions, whole and streamed, carried on a few long-lived CompleteCalls streams to
 * the executors (a message each way instead of an HTTP/2 stream with headers and trailers per
 * call), as unary and server-streaming calls while no stream is open. Each call keeps its
 * deadline, a call the edge gives up on (its client went away) is cancelled on the executor, which
 * aborts the upstream request, and a streamed call is paced by credit that the edge grants as its
 * client takes the chunks.
 */
import { callUnary, type StreamedCalls } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import type { prometheus } from '@gateway/observability';
import { measuredStreamedCalls } from './measured-streamed-calls.js';
import type { EmbedRequest, EmbedResponseOutput, ExecuteRequest, ExecuteResponseOutput, ExecuteStreamEventOutput, ExecutorServiceClient } from '@gateway/proto';

/** The whole calls the edge makes on a CompleteCalls stream, by their names in CompleteCallRequest's oneof. */
export type ExecutorCallMethods = {
  complete: [ExecuteRequest, ExecuteResponseOutput];
  embed: [EmbedRequest, EmbedResponseOutput];
};

/** The streamed calls, by name, with the type of one event. */
export type ExecutorStreamMethods = {
  stream: [ExecuteRequest, ExecuteStreamEventOutput];
};

/** Complete and StreamComplete over CompleteCalls streams, each call with its own deadline and signal. */
export type ExecutorCalls = StreamedCalls<ExecutorCallMethods, ExecutorStreamMethods>;

/**
 * Opens `streams` CompleteCalls streams on the executor channel (0: every call unary) and counts
 * each call's path (`gateway_executor_calls_total`) and the open streams
 * (`gateway_executor_streams_open`). With a DNS name as `target` (the channel's), the streams are
 * as many on each executor (EDGE_EXECUTOR_STREAMS rounded up to a multiple of the replicas), and
 * spread again within seconds of a change of the name's address set: a replica added gets its
 * share, one removed is left. Each is also replaced about every 30 s (the first ones within 3 s of
 * the start), which spreads them behind an address that hides its replicas (a ClusterIP). Close it
 * before the channel.
 */
export function createExecutorCalls(
  executor: ExecutorServiceClient,
  { streams, target }: { streams: number; target: string },
  registry: prometheus.Registry,
  logger: Logger,
): ExecutorCalls {
  return measuredStreamedCalls<ExecutorCallMethods, ExecutorStreamMethods>({
    service: 'executor',
    calls: 'Completions (complete: whole, stream: streamed) and embeddings (embed) sent to an executor',
    streamsOf: 'Completion streams to executors',
    open: () => executor.CompleteCalls(),
    streams,
    target,
    cancellable: true,
    // Executors come and go with the load (an autoscaled pool): behind an address that hides its
    // replicas a new one gets its share within about 30 s, and one still connecting at the edge's
    // start within seconds.
    maxStreamAgeMs: 30_000,
    respreadAfterStartMs: 3_000,
    unary: {
      complete: (request, options) => callUnary(executor, executor.Complete, request, options),
      embed: (request, options) => callUnary(executor, executor.Embed, request, options),
    },
    registry,
    logger,
  });
}

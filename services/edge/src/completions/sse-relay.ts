/**
 * The SSE relay of a streamed chat completion: the executor's events, as OpenAI's
 * `data: {chunk}` ... `data: [DONE]`, with the `gateway` object on the last chunk.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, callMetadata, withoutCallerStack } from '@gateway/grpc';
import { chunkJson, usageChunkJson, type GatewayInfo, type StreamIdentity } from '@gateway/openai-wire';
import type { ChatChunkOutput, ExecuteRequest, ExecuteStreamEventOutput, ExecutionAttemptOutput, ModelOutput, UsageEvent, UsageOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { errorBody, toRequestError } from '../errors.js';
import { BUDGET_REMAINING_HEADER } from '../rate-limit-headers.js';
import type { ParsedChatRequest } from '../wire/parse-chat-request.js';
import { isReplicaLoss, ReplicaLost, streamReplicaRetries } from './executor-replicas.js';
import { answeredModel as answeredModelOf, type Routing } from './model-resolution.js';
import { estimatedUsage, NO_USAGE } from './usage-report.js';

/**
 * Streams the executor's chunks as SSE. Headers are written only when the first event arrives,
 * so a failure before the first byte is still a proper HTTP error. The chunk that carries a
 * finish_reason is held back until the stream ends, so that the `gateway` object rides on the
 * last chunk before [DONE]; every other chunk is written as soon as it arrives. An executor
 * replica that dies before its first event is replaced by another, as for whole requests.
 */
export async function relayStream(
  deps: Pick<EdgeDependencies, 'config' | 'catalog' | 'completions' | 'executor'>,
  request: FastifyRequest,
  reply: FastifyReply,
  execute: ExecuteRequest,
  routing: Routing,
  parsed: ParsedChatRequest,
  abort: AbortController,
  traceparent: string | undefined,
  finish: (
    answered: ModelOutput,
    attempts: readonly ExecutionAttemptOutput[],
    usage: UsageOutput | undefined,
    provider: string,
    outcome: UsageEvent['outcome'],
    firstTokenMs: number | undefined,
    errorCode?: string,
  ) => GatewayInfo,
): Promise<void> {
  const raw = reply.raw;
  const identity: StreamIdentity = {
    id: '',
    created: 0,
    model: routing.model.id ?? '',
    includeUsage: parsed.includeUsage,
    legacyFunctions: parsed.legacyFunctions,
  };
  let started = false;
  // The JSON of the latest chunk that carries a finish_reason, held back to carry `gateway`.
  let held: string | undefined;
  let streamedText = '';
  let keepAlive: NodeJS.Timeout | undefined;
  let answered = routing.model;
  let attempts: readonly ExecutionAttemptOutput[] = [];
  let provider = '';
  let failureUsage: UsageOutput | undefined;
  // When the first chunk of content left (reply.elapsedTime), for the time to first token.
  let firstTokenMs: number | undefined;

  // Events that arrive in one burst (several gRPC messages read at once) leave in one socket
  // write: the response is corked at the first event and uncorked in the same loop turn's check
  // phase (setImmediate), after the promise chain of the stream's iterator has handed over every
  // message already read; process.nextTick uncorked between two messages of one read.
  let corked = false;
  const uncork = () => {
    corked = false;
    raw.uncork();
  };
  const write = async (text: string) => {
    if (!corked) {
      corked = true;
      raw.cork();
      setImmediate(uncork);
    }
    if (!raw.write(text) && !raw.destroyed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          raw.off('drain', done);
          raw.off('close', done);
          resolve();
        };
        raw.on('drain', done);
        raw.on('close', done);
      });
    }
  };
  const armKeepAlive = () => {
    if (keepAlive) keepAlive.refresh();
    else
      keepAlive = setInterval(() => {
        if (!raw.destroyed) raw.write(': ping\n\n');
      }, deps.config.EDGE_STREAM_KEEPALIVE_MS);
  };
  const begin = (first: ChatChunkOutput | undefined) => {
    if (started) return;
    started = true;
    clearTimeout(commitTimer);
    // Set from the executor's start event when it sent them.
    identity.id ||= first?.id || `chatcmpl-${request.id}`;
    identity.created ||= Number(first?.created) || Math.floor(Date.now() / 1000);
    identity.model = answered.id ?? identity.model;
    reply.hijack();
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': request.id,
      'openai-model': identity.model,
      'openai-processing-ms': String(Math.round(reply.elapsedTime)),
      ...corsHeaders(reply),
    });
    armKeepAlive();
  };
  const textOf = (chunk: ChatChunkOutput) => {
    for (const choice of chunk.choices) {
      if (choice.delta?.content) streamedText += choice.delta.content;
      for (const toolCall of choice.delta?.tool_calls ?? []) streamedText += toolCall.function?.arguments ?? '';
    }
  };
  // Writes a chunk's JSON, except the latest one that finishes a choice, which is held (see above).
  const relay = async (json: string, finishes: boolean) => {
    if (held !== undefined) {
      await write(`data: ${held}\n\n`);
      held = undefined;
    }
    if (finishes) held = json;
    else await write(`data: ${json}\n\n`);
  };

  // A model silent for a whole keep-alive interval before its first chunk (a long time to first
  // token) gets the stream committed and pinged, so that clients and proxies do not time out; a
  // failure after that is an error event rather than a status.
  const commitTimer = setTimeout(() => {
    if (started || raw.destroyed) return;
    begin(undefined);
    raw.write(': ping\n\n');
  }, deps.config.EDGE_STREAM_KEEPALIVE_MS);

  // A StreamComplete call of its own, made only while no CompleteCalls stream is open.
  let call: ReturnType<typeof deps.executor.StreamComplete> | undefined;
  const cancel = () => call?.cancel();
  abort.signal.addEventListener('abort', cancel, { once: true });
  try {
    // One try per executor replica: a replica lost before the stream's first event is replaced by
    // another (executor-replicas.ts); anything else ends the stream.
    await streamReplicaRetries
      .execute(async () => {
        const callOptions = { deadlineMs: deps.config.EDGE_COMPLETION_DEADLINE_MS, requestId: request.id, signal: abort.signal, traceparent };
        let events: AsyncIterable<ExecuteStreamEventOutput> | undefined = deps.completions.stream('stream', execute, { ...callOptions, window: STREAM_WINDOW });
        if (!events) {
          const { metadata, callOptions: grpcOptions } = callMetadata(callOptions);
          call = withoutCallerStack(() => deps.executor.StreamComplete(execute, metadata, grpcOptions));
          events = call as AsyncIterable<ExecuteStreamEventOutput>;
        }
        let received = false;
        // Set at the end event. The loop then runs on to the stream's own end (its status follows
        // at once): leaving the loop early would destroy a StreamComplete call, which builds an
        // AbortError with its stack trace for every stream.
        let completed = false;
        try {
          for await (const event of events) {
            received = true;
            if (completed) continue;
            if (event.start) {
              answered = answeredModelOf(deps.catalog, routing, event.start.model_id);
              attempts = event.start.attempts;
              provider = event.start.provider ?? '';
              if (event.start.completion_id && !started) {
                identity.id = event.start.completion_id;
                identity.created = Number(event.start.created) || 0;
              }
            }
            if (event.rendered) {
              // Chunks the executor rendered: written as they are.
              if (!started) begin(undefined);
              firstTokenMs ??= reply.elapsedTime;
              streamedText += event.rendered.text ?? '';
              for (const chunk of event.rendered.chunks) await relay(chunk.json ?? '', chunk.finishes === true);
              armKeepAlive();
            } else if (event.chunk) {
              // A chunk as a message, from an executor that does not render: rendered here.
              const chunk = event.chunk;
              if (!started) begin(chunk);
              firstTokenMs ??= reply.elapsedTime;
              textOf(chunk);
              await relay(
                JSON.stringify(chunkJson(chunk, identity)),
                chunk.choices.some((choice) => choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED'),
              );
              armKeepAlive();
            } else if (event.failure) {
              // The executor's own count of what was generated before it failed; its status follows.
              failureUsage = event.failure.usage;
              provider = event.failure.provider ?? provider;
            } else if (event.end) {
              if (!started) begin(undefined);
              const end = event.end;
              if (end.model_id) answered = answeredModelOf(deps.catalog, routing, end.model_id);
              if (end.attempts.length > 0) attempts = end.attempts;
              const gateway = finish(answered, attempts, end.usage, end.provider ?? provider, 'OUTCOME_COMPLETED', firstTokenMs);
              let tail = '';
              if (held !== undefined) tail += `data: ${parsed.includeUsage ? held : withGateway(held, gateway)}\n\n`;
              if (parsed.includeUsage) tail += `data: ${JSON.stringify(usageChunkJson(end.usage, identity, gateway))}\n\n`;
              else if (!held) tail += `data: ${JSON.stringify({ ...chunkJson({ choices: [] } as unknown as ChatChunkOutput, identity), gateway })}\n\n`;
              held = undefined;
              raw.end(`${tail}data: [DONE]\n\n`);
              completed = true;
            }
          }
        } catch (error) {
          // The answer is complete: what the stream does after its end event changes nothing.
          if (completed) return;
          if (!received && isReplicaLoss(error)) {
            request.log.warn('executor replica lost before the stream began');
            throw new ReplicaLost(error);
          }
          throw error;
        }
        if (completed) return;
        // The executor closed the stream without its end event: never end cleanly as if complete.
        throw GatewayError.of('upstream_error', 'The model stream ended unexpectedly.');
      }, abort.signal)
      .catch((error: unknown) => {
        throw error instanceof ReplicaLost ? error.failure : error;
      });
  } catch (error) {
    if (abort.signal.aborted) {
      // The client went away: meter what was generated before it left.
      finish(answered, attempts, await estimatedUsage(execute, streamedText), provider, 'OUTCOME_CANCELLED', firstTokenMs);
      return;
    }
    const requestError = toRequestError(error instanceof GatewayError ? error : GatewayError.fromServiceError(error));
    if (!started) {
      // Nothing reached the caller: the request is metered as an error with what the executor
      // counted, if anything, and answered with a status.
      finish(answered, attempts, failureUsage ?? NO_USAGE, provider, 'OUTCOME_FAILED', firstTokenMs, requestError.code ?? 'internal_error');
      throw requestError;
    }
    request.log.warn({ err: (error as Error).message }, 'stream failed after the first byte');
    finish(
      answered,
      attempts,
      failureUsage ?? (await estimatedUsage(execute, streamedText)),
      provider,
      'OUTCOME_FAILED',
      firstTokenMs,
      requestError.code ?? 'internal_error',
    );
    if (!raw.destroyed) raw.end(`data: ${errorBody(requestError)}\n\n`);
  } finally {
    clearTimeout(commitTimer);
    if (keepAlive) clearInterval(keepAlive);
    abort.signal.removeEventListener('abort', cancel);
  }
}

/**
 * How many events of a streamed completion may travel ahead of its client: each event is one
 * batch of the chunks the upstream delivered together, so this bounds what the edge buffers for a
 * slow client while the upstream is held back.
 */
const STREAM_WINDOW = 8;

/** A chunk's JSON with the `gateway` object added as its last member. */
function withGateway(chunkJsonText: string, gateway: GatewayInfo): string {
  return `${chunkJsonText.slice(0, -1)},"gateway":${JSON.stringify(gateway)}}`;
}

/** The CORS headers fastify's cors plugin set on the reply, carried onto a hijacked response. */
function corsHeaders(reply: FastifyReply): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (name.startsWith('access-control-') || name === 'vary' || name.startsWith('x-ratelimit-') || name === BUDGET_REMAINING_HEADER)
      headers[name] = String(value);
  }
  return headers;
}

/**
 * The ExecutorService handlers: resolve the catalog model, run it through the deployment pool
 * (retries, breakers, fallbacks: pool/run-with-fallbacks.ts), and convert failures to gRPC
 * statuses in one place (toGatewayError + toServiceError).
 *
 * Streams (StreamComplete, or `stream` calls on CompleteCalls streams: one runStream serves both):
 * the first event carries `start` (which model answers, what was tried before it); `rendered`
 * events carry the upstream chunks as the caller's JSON as they arrive; then exactly one `end`
 * event with the usage of the whole stream (whether or not the caller asked for include_usage: the
 * edge builds the usage chunk from it; usage-only upstream chunks are therefore never forwarded as
 * chunks). A failure after the first chunk sends one `failure` event with the usage so far, then
 * the error. Nothing is retried after the first byte. A cancelled call (client gone, deadline
 * passed) aborts the upstream request, its retries and its fallbacks at once. While the caller
 * cannot take more (a full gRPC buffer, or a streamed call out of credit), nothing more is pulled
 * from the upstream.
 */
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { CatalogModel } from '@gateway/catalog';
import {
  callTraceparent,
  GatewayError,
  GrpcStatus,
  requestIdOf,
  serveStreamedCalls,
  toServiceError,
  unary,
  type ErrorReporter,
  type StreamedCallContext,
  type StreamingCallContext,
} from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import { endWithError, NO_TRACING, SpanKind, type Span, type Tracing } from '@gateway/observability';
import { chunkJson, type StreamIdentity } from '@gateway/openai-wire';
import type {
  ChatChunk,
  ChatChunkOutput,
  ChatRequestOutput,
  CompleteCallRequestOutput,
  CompleteCallResponse,
  ExecuteRequestOutput,
  RenderedChunk,
  ExecuteResponse,
  ExecuteStreamEvent,
  ExecutionAttempt,
  ExecutorServiceHandlers,
  StreamStart,
  Usage,
} from '@gateway/proto';
import { countPromptTokensAsync, countTextTokensAsync } from '@gateway/tokens';
import type { ExecutorMetrics } from './executor-metrics.js';
import { blame, runWithFallbacks, type RetryOptions } from './pool/run-with-fallbacks.js';
import type { Deployment, DeploymentPool } from './pool/deployment-pool.js';
import type { Provider, ProviderStreamEvent } from './providers/provider.js';
import type { ProviderRegistry } from './providers/provider-registry.js';
import { toGatewayError } from './to-gateway-error.js';

/** What the handlers need. */
export interface ExecutorServiceDependencies {
  /** The deployments of the models that are on (enabledModels of the catalog). */
  readonly pool: DeploymentPool;
  /** Which adapter serves a model (the ProviderRegistry; tests may give their own). */
  readonly providers: Pick<ProviderRegistry, 'forModel'>;
  readonly logger: Logger;
  readonly metrics: ExecutorMetrics;
  readonly retry: RetryOptions;
  /** Traces (OTLP), when configured; off by default. */
  readonly tracing?: Tracing;
}

type StreamCall = Parameters<ExecutorServiceHandlers['StreamComplete']>[0];
type UnaryCall = Parameters<ExecutorServiceHandlers['Complete']>[0];

/** What one call did, for the log line and the metrics. */
interface Outcome {
  readonly label: string;
  readonly error?: unknown;
  readonly usage?: Usage;
}

/** Who answered a call, once known. */
interface Answer {
  readonly model: CatalogModel;
  readonly provider: Provider;
  readonly attempts: ExecutionAttempt[];
}

/** A stream that reached its first event. */
interface OpenedStream {
  readonly provider: Provider;
  readonly iterator: AsyncIterator<ProviderStreamEvent>;
  readonly first: IteratorResult<ProviderStreamEvent>;
  /** The span of the upstream call (tracing on), ended with the stream. */
  readonly upstream: Span | undefined;
}

/** Where a streamed completion's events go, and what bounds it. */
interface StreamSink {
  readonly signal: AbortSignal;
  /** Unix ms; Infinity when the call has none. */
  readonly deadline: number;
  readonly requestId: string;
  /** The caller's span as a W3C traceparent, when tracing is on. */
  readonly traceparent?: string;
  /** Sends one event; resolves when the next may be sent. */
  send(event: ExecuteStreamEvent): Promise<void>;
}

/** Labels of a call whose model could not be resolved: never the caller's text. */
const UNKNOWN = 'unknown';

/** The deadline of a call in unix ms; Infinity when it has none. */
function deadlineOf(call: StreamCall | UnaryCall): number {
  const deadline = call.getDeadline();
  const value = deadline instanceof Date ? deadline.getTime() : Number(deadline);
  return Number.isFinite(value) && value > 0 ? value : Number.POSITIVE_INFINITY;
}

/** The executor's handlers, and how its CompleteCalls streams are drained on shutdown. */
export interface ExecutorService {
  readonly handlers: ExecutorServiceHandlers;
  /** Asks the callers of CompleteCalls streams to move elsewhere; see GatewayService.drain. */
  readonly drain: (patienceMs: number) => Promise<void>;
}

/** Creates the grpc-js handlers of gateway.executor.v1.ExecutorService. */
export function createExecutorHandlers(dependencies: ExecutorServiceDependencies): ExecutorService {
  const { logger, metrics, providers, pool } = dependencies;
  const tracing = dependencies.tracing ?? NO_TRACING;
  const report: ErrorReporter = (error, method) => logger.error({ err: error, method }, 'executor handler failed');

  /** The models to try, the primary first; an unknown primary is NOT_FOUND before anything runs. */
  function plan(execute: ExecuteRequestOutput): string[] {
    const primary = execute.model_id ?? '';
    if (!pool.has(primary)) {
      throw GatewayError.of('model_not_found', `The model '${primary}' does not exist or is not available.`, { param: 'model' });
    }
    if (!execute.request) throw GatewayError.of('invalid_request', 'The execute request carries no chat request.');
    const fallbacks = (execute.fallbacks ?? []).filter((id, index, all) => id !== primary && all.indexOf(id) === index);
    return [primary, ...fallbacks];
  }

  function outcomeOf(error: unknown, signal: AbortSignal): Outcome {
    if (signal.aborted) return { label: 'cancelled' };
    const mapped = toGatewayError(error);
    return { label: mapped instanceof GatewayError ? mapped.reason : 'internal_error', error: mapped };
  }

  function record(
    execute: ExecuteRequestOutput,
    requestId: string,
    answer: Answer | undefined,
    started: number | undefined,
    outcome: Outcome,
    method: string,
  ): void {
    const model = answer?.model.id ?? (pool.has(execute.model_id ?? '') ? (execute.model_id ?? UNKNOWN) : UNKNOWN);
    const provider = answer?.provider.name ?? UNKNOWN;
    metrics.requests.inc({ model, provider, outcome: outcome.label });
    const seconds = started === undefined ? undefined : (performance.now() - started) / 1000;
    if (seconds !== undefined && answer) metrics.upstreamDuration.observe({ model, provider, outcome: outcome.label }, seconds);
    for (const attempt of answer?.attempts ?? [])
      metrics.fallbacks.inc({ from: pool.has(attempt.model_id ?? '') ? (attempt.model_id ?? UNKNOWN) : UNKNOWN, reason: attempt.reason ?? UNKNOWN });
    const fields = {
      method,
      request_id: requestId || execute.request_id,
      key_id: execute.key_id,
      model: answer?.model.id ?? execute.model_id,
      requested_model: execute.model_id,
      provider,
      attempts: answer?.attempts.length ? answer.attempts : undefined,
      outcome: outcome.label,
      duration_ms: seconds === undefined ? undefined : Math.round(seconds * 1000),
      usage: outcome.usage,
    };
    if (outcome.error === undefined) logger.info(fields, 'completion finished');
    else if (outcome.error instanceof GatewayError && outcome.error.code !== GrpcStatus.INTERNAL) {
      // The upstream cause (UpstreamError: status, kind, our wording) goes to the log only.
      logger.warn({ ...fields, err: outcome.error.cause ?? outcome.error }, 'completion failed');
    } else logger.error({ ...fields, err: outcome.error }, 'completion failed');
  }

  /** Aborts the controller when the call is cancelled; returns the function that stops listening. */
  function abortOnCancel(call: StreamCall | UnaryCall, controller: AbortController): () => void {
    const cancel = () => controller.abort();
    call.on('cancelled', cancel);
    if (call.cancelled) controller.abort();
    return () => call.off('cancelled', cancel);
  }

  function onRetry(modelId: string, reason: string): void {
    metrics.retries.inc({ model: modelId, reason });
  }

  /** The executor's span of one call (tracing on): the caller's span its parent. */
  function callSpan(name: string, execute: ExecuteRequestOutput, traceparent: string | undefined): Span | undefined {
    return tracing.startSpan(name, {
      kind: SpanKind.SERVER,
      parent: traceparent,
      attributes: { 'rpc.system': 'grpc', 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': execute.model_id ?? '' },
    });
  }

  /** The span of one upstream call, a child of the call's span, per the GenAI conventions. */
  function upstreamSpan(parent: Span | undefined, model: CatalogModel, provider: string): Span | undefined {
    if (!parent) return undefined;
    let address = '';
    try {
      address = model.upstream.base_url ? new URL(model.upstream.base_url).host : '';
    } catch {
      address = '';
    }
    return tracing.startSpan(`chat ${model.upstream.model ?? model.id}`, {
      kind: SpanKind.CLIENT,
      parent: tracing.traceparentOf(parent),
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': provider,
        'gen_ai.request.model': model.upstream.model ?? model.id,
        'gateway.model': model.id,
        ...(address ? { 'server.address': address } : {}),
      },
    });
  }

  /** Ends a call's span with what it produced; failures with their reason. */
  function endCallSpan(span: Span | undefined, answer: Answer | undefined, usage: Usage | undefined, outcome: Outcome): void {
    if (!span) return;
    span.setAttributes({
      'gen_ai.response.model': answer?.model.id ?? '',
      'gen_ai.provider.name': answer?.provider.name ?? '',
      'gen_ai.usage.input_tokens': usage?.prompt_tokens ?? 0,
      'gen_ai.usage.output_tokens': usage?.completion_tokens ?? 0,
      'gateway.outcome': outcome.label,
    });
    for (const attempt of answer?.attempts ?? [])
      span.addEvent('gateway.fallback', { 'gateway.fallback.from_model': attempt.model_id ?? '', 'gateway.fallback.reason': attempt.reason ?? '' });
    if (outcome.label === 'ok') span.end();
    else endWithError(span, outcome.label);
  }

  /**
   * Runs a whole completion: the model, then its fallbacks, each with retries, until one answers.
   * `signal` aborts everything at once (the caller went away); `deadline` bounds the retries.
   */
  async function runComplete(
    execute: ExecuteRequestOutput,
    requestId: string,
    deadline: number,
    signal: AbortSignal,
    traceparent?: string,
  ): Promise<ExecuteResponse> {
    let answer: Answer | undefined;
    const started = performance.now();
    const span = callSpan('executor.complete', execute, traceparent);
    try {
      const models = plan(execute);
      const request = execute.request as ChatRequestOutput;
      const result = await runWithFallbacks({
        pool,
        models,
        signal,
        deadline,
        retry: dependencies.retry,
        onRetry,
        start: async (deployment) => {
          const provider = providers.forModel(deployment.model);
          const upstream = upstreamSpan(span, deployment.model, provider.name);
          try {
            const response = await provider.complete(request, { model: deployment.model, signal, requestId, traceparent: tracing.traceparentOf(upstream) });
            upstream?.setAttributes({
              'gen_ai.usage.input_tokens': response.usage?.prompt_tokens ?? 0,
              'gen_ai.usage.output_tokens': response.usage?.completion_tokens ?? 0,
            });
            upstream?.end();
            return { provider, response };
          } catch (error) {
            endWithError(upstream, signal.aborted ? 'cancelled' : 'upstream_failed');
            throw error;
          }
        },
      });
      result.deployment.outstanding -= 1;
      answer = { model: result.deployment.model, provider: result.value.provider, attempts: result.attempts };
      const response = result.value.response;
      record(execute, requestId, answer, started, { label: 'ok', usage: response.usage ?? undefined }, 'Complete');
      endCallSpan(span, answer, response.usage ?? undefined, { label: 'ok' });
      return { response, provider: answer.provider.name, model_id: answer.model.id, attempts: answer.attempts };
    } catch (error) {
      const outcome = outcomeOf(error, signal);
      record(execute, requestId, answer, started, outcome, 'Complete');
      endCallSpan(span, answer, undefined, outcome);
      throw outcome.error ?? GatewayError.of('cancelled', 'The request was cancelled.');
    }
  }

  const complete = unary<ExecuteRequestOutput, ExecuteResponse>(
    async (execute, call) => {
      const controller = new AbortController();
      const stopListening = abortOnCancel(call, controller);
      try {
        return await runComplete(execute, requestIdOf(call), deadlineOf(call), controller.signal, callTraceparent(call));
      } finally {
        stopListening();
      }
    },
    'Complete',
    report,
  );

  /**
   * Runs a streamed completion, sending its events through `sink` (the StreamComplete call, or a
   * streamed call on a CompleteCalls stream), and returns the `end` event, which the caller sends
   * last. A failure after the first chunk sends the `failure` event first, then throws.
   */
  async function runStream(execute: ExecuteRequestOutput, sink: StreamSink): Promise<ExecuteStreamEvent> {
    const { signal, requestId } = sink;
    const started = performance.now();
    const span = callSpan('executor.stream', execute, sink.traceparent);
    let upstream: Span | undefined;
    let answer: Answer | undefined;
    let deployment: Deployment | undefined;
    let iterator: AsyncIterator<ProviderStreamEvent> | undefined;
    let sentChunks = false;
    let streamedText = '';
    let usage: Usage | undefined;
    try {
      const models = plan(execute);
      const request = execute.request as ChatRequestOutput;
      const result = await runWithFallbacks<OpenedStream>({
        pool,
        models,
        signal,
        deadline: sink.deadline,
        retry: dependencies.retry,
        onRetry,
        start: async (candidate) => {
          const provider = providers.forModel(candidate.model);
          const attemptSpan = upstreamSpan(span, candidate.model, provider.name);
          const opened = provider
            .stream(request, { model: candidate.model, signal, requestId, traceparent: tracing.traceparentOf(attemptSpan) })
            [Symbol.asyncIterator]();
          try {
            return { provider, iterator: opened, first: await opened.next(), upstream: attemptSpan };
          } catch (error) {
            endWithError(attemptSpan, signal.aborted ? 'cancelled' : 'upstream_failed');
            await opened.return?.().catch(() => undefined);
            throw error;
          }
        },
      });
      deployment = result.deployment;
      iterator = result.value.iterator;
      upstream = result.value.upstream;
      answer = { model: deployment.model, provider: result.value.provider, attempts: result.attempts };
      // Chunks are rendered here as the caller's JSON (the edge writes them as they are), with the
      // id and created of the stream's first chunk, which the start event tells the edge.
      const first = result.value.first;
      const firstChunk = !first.done && first.value.type === 'chunk' ? first.value.chunk : undefined;
      const identity: StreamIdentity = {
        id: firstChunk?.id || `chatcmpl-${execute.request_id || requestId}`,
        created: Number(firstChunk?.created) || Math.floor(Date.now() / 1000),
        model: answer.model.id,
        includeUsage: request.stream_options?.include_usage === true,
        legacyFunctions: execute.legacy_functions === true,
      };
      let start: StreamStart | undefined = {
        model_id: answer.model.id,
        provider: answer.provider.name,
        attempts: answer.attempts,
        completion_id: identity.id,
        created: identity.created,
      };
      const send = (event: ExecuteStreamEvent) => {
        signal.throwIfAborted();
        const withStart = start ? { ...event, start } : event;
        start = undefined;
        return sink.send(withStart);
      };
      // Chunks the upstream delivered together leave in one message: the batch is sent once the
      // next chunk is not already at hand (it would need another read from the upstream).
      let batch: RenderedChunk[] = [];
      let batchText = '';
      const flush = async () => {
        if (batch.length === 0) return;
        const rendered = { chunks: batch, text: batchText };
        batch = [];
        batchText = '';
        await send({ rendered });
        sentChunks = true;
      };
      let next = first;
      while (!next.done) {
        const event = next.value;
        if (event.type === 'usage') {
          // The answer is whole: the last chunks and the end leave together, while the upstream's
          // response ends in the background (its connection goes back to the pool).
          usage = event.usage;
          void drainQuietly(iterator);
          iterator = undefined;
          break;
        } else {
          const text = chunkText(event.chunk);
          streamedText += text;
          batchText += text;
          batch.push({
            json: JSON.stringify(chunkJson(event.chunk as ChatChunkOutput, identity)),
            finishes: event.chunk.choices?.some((choice) => choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED') === true,
          });
        }
        // A batch is bounded, so that an upstream that is always at hand still meets backpressure.
        if (batch.length >= MAX_BATCH_CHUNKS) await flush();
        const pending = iterator.next();
        let ready: IteratorResult<ProviderStreamEvent> | typeof NOT_AT_HAND;
        try {
          ready = await Promise.race([pending, nextLoopTurn()]);
        } catch (error) {
          // What was generated before the failure still reaches the caller.
          await flush().catch(() => undefined);
          throw error;
        }
        if (ready === NOT_AT_HAND) {
          await flush();
          next = await pending;
        } else next = ready;
      }
      await flush();
      signal.throwIfAborted();
      const end: ExecuteStreamEvent = { end: { usage: usage ?? {}, provider: answer.provider.name, model_id: answer.model.id, attempts: answer.attempts } };
      record(execute, requestId, answer, started, { label: 'ok', usage }, 'StreamComplete');
      upstream?.setAttributes({ 'gen_ai.usage.input_tokens': usage?.prompt_tokens ?? 0, 'gen_ai.usage.output_tokens': usage?.completion_tokens ?? 0 });
      upstream?.end();
      endCallSpan(span, answer, usage, { label: 'ok' });
      return start ? { ...end, start } : end;
    } catch (error) {
      // Only failures after the first byte reach the breaker here; earlier ones were reported by runWithFallbacks.
      if (deployment && sentChunks) blame(deployment, error, signal);
      const outcome = outcomeOf(error, signal);
      // A cancelled call's usage is the edge's to estimate (it cannot hear from us any more).
      const partial = answer && sentChunks && !signal.aborted ? (usage ?? (await countedUsage(execute.request as ChatRequestOutput, streamedText))) : undefined;
      record(execute, requestId, answer, started, { ...outcome, usage: partial }, 'StreamComplete');
      endWithError(upstream, outcome.label);
      endCallSpan(span, answer, partial, outcome);
      // The chunks already sent are followed by the usage they cost, then the failure itself.
      if (answer && partial)
        await sink
          .send({ failure: { usage: partial, provider: answer.provider.name, model_id: answer.model.id, usage_estimated: usage === undefined } })
          .catch(() => undefined);
      throw outcome.error ?? GatewayError.of('cancelled', 'The request was cancelled.');
    } finally {
      if (deployment) deployment.outstanding -= 1;
      // Leaving early (cancelled, failed while writing) releases the upstream connection.
      await iterator?.return?.().catch(() => undefined);
    }
  }

  /** StreamComplete: runStream's events as the call's messages, a failure as its status. */
  async function streamComplete(call: StreamCall): Promise<void> {
    const controller = new AbortController();
    const stopListening = abortOnCancel(call, controller);
    const signal = controller.signal;
    try {
      const end = await runStream(call.request, {
        signal,
        deadline: deadlineOf(call),
        requestId: requestIdOf(call),
        traceparent: callTraceparent(call),
        send: async (event) => {
          if (!call.write(event)) await once(call, 'drain', { signal });
        },
      });
      call.write(end);
      call.end();
    } catch (error) {
      // A cancelled call has no one to tell; anything else leaves as the stream's status.
      if (!signal.aborted) call.emit('error', toServiceError(error, 'StreamComplete', report));
    } finally {
      stopListening();
    }
  }

  // Complete and StreamComplete as messages on CompleteCalls streams: the same work, its deadline,
  // cancellation and (for streams) credit carried by the stream's messages.
  const completeCalls = serveStreamedCalls<CompleteCallRequestOutput, CompleteCallResponse>(
    {
      complete: (execute: ExecuteRequestOutput, context: StreamedCallContext) =>
        runComplete(execute, execute.request_id ?? '', context.deadline, context.signal, context.traceparent),
    },
    'CompleteCalls',
    report,
    {
      stream: (execute: ExecuteRequestOutput, context: StreamingCallContext<ExecuteStreamEvent>) =>
        runStream(execute, { ...context, requestId: execute.request_id ?? '' }),
    },
  );

  return {
    handlers: {
      Complete: complete,
      StreamComplete: (call) => {
        void streamComplete(call);
      },
      CompleteCalls: completeCalls.handler,
    },
    drain: completeCalls.drain,
  };
}

/** The most chunks one rendered event carries. */
const MAX_BATCH_CHUNKS = 64;

/** Resolves in the check phase of this loop turn: after whatever the upstream had already delivered. */
const NOT_AT_HAND = Symbol('not at hand');
/** The end of the current loop turn, shared by every stream and chunk of that turn: one timer a turn. */
let loopTurnEnd: Promise<typeof NOT_AT_HAND> | undefined;
function nextLoopTurn(): Promise<typeof NOT_AT_HAND> {
  loopTurnEnd ??= new Promise((resolve) =>
    setImmediate(() => {
      loopTurnEnd = undefined;
      resolve(NOT_AT_HAND);
    }),
  );
  return loopTurnEnd;
}

/** Pulls a provider stream to its end, ignoring what it yields and how it ends. */
async function drainQuietly(iterator: AsyncIterator<ProviderStreamEvent>): Promise<void> {
  try {
    while (!(await iterator.next()).done);
  } catch {
    // The answer was already whole.
  }
}

/** The completion text of a chunk: content, refusal, tool-call names and arguments. */
function chunkText(chunk: ChatChunk): string {
  let text = '';
  for (const choice of chunk.choices ?? []) {
    text += choice.delta?.content ?? '';
    text += choice.delta?.refusal ?? '';
    for (const toolCall of choice.delta?.tool_calls ?? []) text += `${toolCall.function?.name ?? ''}${toolCall.function?.arguments ?? ''}`;
  }
  return text;
}

/**
 * Usage of a stream cut short: the prompt and what was streamed, counted exactly with the
 * gateway's tokenizer, in time slices so that a 16 MB prompt never holds the event loop.
 */
async function countedUsage(request: ChatRequestOutput, streamedText: string): Promise<Usage> {
  const prompt = await countPromptTokensAsync(request);
  const completion = await countTextTokensAsync(streamedText);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion, cached_tokens: 0, reasoning_tokens: 0 };
}

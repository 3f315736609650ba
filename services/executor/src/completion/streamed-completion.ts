/**
 * StreamComplete (and `stream` calls on CompleteCalls streams: one runStream serves both): the
 * first event carries `start` (which model answers, what was tried before it); `rendered` events
 * carry the upstream chunks as the caller's JSON as they arrive (chunk-batcher.ts); then exactly
 * one `end` event with the usage of the whole stream (whether or not the caller asked for
 * include_usage: the edge builds the usage chunk from it; usage-only upstream chunks are therefore
 * never forwarded as chunks). A failure after the first chunk sends one `failure` event with the
 * usage so far, then the error. Nothing is retried after the first byte. A cancelled call (client
 * gone, deadline passed) aborts the upstream request, its retries and its fallbacks at once. While
 * the caller cannot take more (a full gRPC buffer, or a streamed call out of credit), nothing more
 * is pulled from the upstream.
 */
import { once } from 'node:events';
import { toServiceError } from '@gateway/grpc';
import type { Span } from '@gateway/observability';
import type { ChatRequestOutput, ExecuteStreamEvent, ExecutorServiceHandlers, Usage } from '@gateway/proto';
import { countPromptTokensAsync, countTextTokensAsync } from '@gateway/tokens';
import { blame } from '../pool/run-with-fallbacks.js';
import type { ProviderStreamEvent } from '../providers/provider.js';
import { listenToCall, type StreamCall } from './call-bounds.js';
import { ChunkBatcher, type ChunkSink } from './chunk-batcher.js';
import { type Answer, CompletionRun, type RunServices } from './completion-run.js';

/** What a stream holds while it runs, for its end and its failure. */
interface StreamState {
  /** The upstream's events; undefined once the answer is whole and the rest is drained apart. */
  iterator?: AsyncIterator<ProviderStreamEvent>;
  /** The span of the upstream call (tracing on), ended with the stream. */
  upstream?: Span;
  /** The upstream's usage, once its usage event came. */
  usage?: Usage;
  batcher?: ChunkBatcher;
}

/**
 * Runs a streamed completion, sending its events through `sink` (the StreamComplete call, or a
 * streamed call on a CompleteCalls stream), and returns the `end` event, which the caller sends
 * last. A failure after the first chunk sends the `failure` event first, then throws.
 */
export async function runStream(run: CompletionRun, sink: ChunkSink): Promise<ExecuteStreamEvent> {
  const state: StreamState = {};
  try {
    const first = await openStream(run, state);
    const batcher = batcherOf(run, sink, first);
    state.batcher = batcher;
    state.usage = await batcher.relay(first, state.iterator as AsyncIterator<ProviderStreamEvent>);
    if (state.usage !== undefined) {
      // The answer is whole: the last chunks and the end leave together, while the upstream's
      // response ends in the background (its connection goes back to the pool).
      void drainQuietly(state.iterator as AsyncIterator<ProviderStreamEvent>);
      state.iterator = undefined;
    }
    await batcher.flush();
    run.signal.throwIfAborted();
    const answer = run.answer as Answer;
    const end: ExecuteStreamEvent = {
      end: {
        usage: state.usage ?? {},
        provider: answer.provider.name,
        model_id: answer.model.id,
        attempts: answer.attempts,
        deployment_id: answer.deploymentId,
      },
    };
    run.succeed({ label: 'ok', usage: state.usage }, state.upstream);
    return batcher.last(end);
  } catch (error) {
    throw await failStream(run, state, sink, error);
  } finally {
    run.release();
    // Leaving early (cancelled, failed while writing) releases the upstream connection.
    await state.iterator?.return?.().catch(() => undefined);
  }
}

/** Runs the plan until a deployment's stream reaches its first event, which it returns. */
async function openStream(run: CompletionRun, state: StreamState): Promise<IteratorResult<ProviderStreamEvent>> {
  const opened = await run.start(async (provider, context, upstream) => {
    const iterator = provider.stream(run.request, context)[Symbol.asyncIterator]();
    try {
      return { iterator, first: await iterator.next(), upstream };
    } catch (error) {
      await iterator.return?.().catch(() => undefined);
      throw error;
    }
  });
  state.iterator = opened.iterator;
  state.upstream = opened.upstream;
  return opened.first;
}

/**
 * The stream's batcher. Chunks carry the id and created of the stream's first chunk, which the
 * start event tells the edge.
 */
function batcherOf(run: CompletionRun, sink: ChunkSink, first: IteratorResult<ProviderStreamEvent>): ChunkBatcher {
  const { execute } = run;
  const answer = run.answer as Answer;
  const firstChunk = !first.done && first.value.type === 'chunk' ? first.value.chunk : undefined;
  const identity = {
    id: firstChunk?.id || `chatcmpl-${execute.request_id || run.requestId}`,
    created: Number(firstChunk?.created) || Math.floor(Date.now() / 1000),
    model: answer.model.id,
    includeUsage: run.request.stream_options?.include_usage === true,
    legacyFunctions: execute.legacy_functions === true,
  };
  const start = {
    model_id: answer.model.id,
    provider: answer.provider.name,
    deployment_id: answer.deploymentId,
    attempts: answer.attempts,
    completion_id: identity.id,
    created: identity.created,
  };
  return new ChunkBatcher({ identity, start, sink, signal: run.signal });
}

/**
 * Records a failed stream and, when chunks were already sent, sends the usage they cost; returns
 * the failure to end the call with.
 */
async function failStream(run: CompletionRun, state: StreamState, sink: ChunkSink, error: unknown): Promise<unknown> {
  const { answer, signal } = run;
  const sentChunks = state.batcher?.sent === true;
  // Only failures after the first byte reach the breaker here; earlier ones were reported by runWithFallbacks.
  if (run.deployment && sentChunks) blame(run.deployment, error, signal);
  const outcome = run.outcomeOf(error);
  // A cancelled call's usage is the edge's to estimate (it cannot hear from us any more).
  const partial = answer && sentChunks && !signal.aborted ? (state.usage ?? (await countedUsage(run.request, state.batcher?.streamedText ?? ''))) : undefined;
  const failure = run.fail({ ...outcome, usage: partial }, state.upstream);
  // The chunks already sent are followed by the usage they cost, then the failure itself.
  if (answer && partial)
    await sink
      .send({
        failure: {
          usage: partial,
          provider: answer.provider.name,
          model_id: answer.model.id,
          deployment_id: answer.deploymentId,
          usage_estimated: state.usage === undefined,
        },
      })
      .catch(() => undefined);
  return failure;
}

/** The StreamComplete handler: runStream's events as the call's messages, a failure as its status. */
export function streamCompleteHandler(services: RunServices): ExecutorServiceHandlers['StreamComplete'] {
  return (call) => {
    void streamComplete(services, call);
  };
}

async function streamComplete(services: RunServices, call: StreamCall): Promise<void> {
  const { bounds, stopListening } = listenToCall(call);
  const { signal } = bounds;
  try {
    const end = await runStream(new CompletionRun(services, call.request, bounds, 'StreamComplete'), {
      send: async (event) => {
        if (!call.write(event)) await once(call, 'drain', { signal });
      },
    });
    call.write(end);
    call.end();
  } catch (error) {
    // A cancelled call has no one to tell; anything else leaves as the stream's status.
    if (!signal.aborted) call.emit('error', toServiceError(error, 'StreamComplete', services.report));
  } finally {
    stopListening();
  }
}

/** Pulls a provider stream to its end, ignoring what it yields and how it ends. */
async function drainQuietly(iterator: AsyncIterator<ProviderStreamEvent>): Promise<void> {
  try {
    while (!(await iterator.next()).done);
  } catch {
    // The answer was already whole.
  }
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

/**
 * The streamed execution of a completion: the executor's events relayed to the caller as
 * server-sent events, rendered by the completion's wire (a StreamRenderer), and reported when the
 * stream ends however it ends.
 *
 * One piece: one stream's relay, a class whose state (the attempt, the fallbacks left, the hold-
 * back, the keep-alive timer, what has been written) every step reads; the rendering is the wire's
 * and the hold-back stream-hold-back.ts's.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { GatewayError, callMetadata, withoutCallerStack } from '@gateway/grpc';
import type { ChatChunkOutput, ExecuteStreamEventOutput, StreamEndOutput } from '@gateway/proto';
import type { EdgeDependencies } from '../dependencies.js';
import { toRequestError } from '../errors.js';
import { BUDGET_REMAINING_HEADER } from '../rate-limit-headers.js';
import type { Completion, StreamRenderer } from './completion.js';
import { isReplicaLoss, ReplicaLost, streamReplicaRetries } from './executor-replicas.js';
import { answeredModel } from './model-resolution.js';
import { estimatedUsage, NO_USAGE, type UsageReporter } from './usage-report.js';
import { StreamHoldBack } from '../guardrails/stream-hold-back.js';
import { AnswerAssembler } from '../cache/answer-assembler.js';

/** What the relay uses of the edge. */
type RelayDependencies = Pick<EdgeDependencies, 'config' | 'catalog' | 'completions' | 'executor'>;

/**
 * How many events of a streamed completion may travel ahead of its client: each event is one
 * batch of the chunks the upstream delivered together, so this bounds what the edge buffers for a
 * slow client while the upstream is held back.
 */
const STREAM_WINDOW = 8;

/**
 * Streams the executor's chunks as SSE. Headers are written only when the first event arrives,
 * so a failure before the first byte is still a proper HTTP error. The chunk that carries a
 * finish_reason is held back until the stream ends, so that the wire can add its summary (the
 * `gateway` object) to the last chunk; every other chunk is written as soon as it arrives. An
 * executor replica that dies before its first event is replaced by another, as for whole requests.
 * Under output guardrails (completion.guard) every chunk passes through the stream hold-back
 * (guardrails/stream-hold-back.ts) and leaves only once its text was checked; a blocked answer
 * ends with the wire's content_filter ending and the executor call is cancelled. Without a guard
 * the relay does nothing more per chunk than it always did.
 */
export async function relayStream(deps: RelayDependencies, completion: Completion, report: UsageReporter): Promise<void> {
  const relay = new SseRelay(deps, completion, report);
  try {
    await relay.run();
  } finally {
    completion.streamedText = relay.text;
  }
}

/** One stream's relay: its state lives as long as the stream. */
class SseRelay {
  private readonly raw: ServerResponse;
  private readonly reply: FastifyReply;
  private readonly renderer: StreamRenderer;
  private started = false;
  /** The latest chunk that carries a finish_reason, held back for the wire's summary. */
  private held: string | undefined;
  private streamedText = '';
  /** The text and tool call arguments streamed so far. */
  get text(): string {
    return this.streamedText;
  }
  private keepAlive: NodeJS.Timeout | undefined;
  private corked = false;
  private readonly commitTimer: NodeJS.Timeout;
  /** A StreamComplete call of its own, made only while no CompleteCalls stream is open. */
  private call: ReturnType<RelayDependencies['executor']['StreamComplete']> | undefined;
  private readonly cancel = () => this.call?.cancel();
  /** Under output guardrails: the hold-back every chunk passes through, and what stops the executor call on a block. */
  private readonly holdBack: StreamHoldBack | undefined;
  private readonly stop: AbortController | undefined;
  private blocked = false;
  /** A stream the response cache keeps: its chunks put back together as they pass. */
  private readonly assembler: AnswerAssembler | undefined;
  /** Under output guardrails: the text the executor generated, released or not (for a usage estimate). */
  private generatedText = '';
  private readonly uncork = () => {
    this.corked = false;
    this.raw.uncork();
  };

  constructor(
    private readonly deps: RelayDependencies,
    private readonly completion: Completion,
    private readonly report: UsageReporter,
  ) {
    this.reply = completion.reply;
    this.raw = completion.reply.raw;
    this.renderer = completion.wire.openStream(completion);
    this.assembler = completion.cache?.store ? new AnswerAssembler() : undefined;
    const guard = completion.guard;
    if (guard) {
      this.stop = new AbortController();
      this.holdBack = new StreamHoldBack({
        window: guard.streamWindow,
        check: (texts, final) => guard.check('POINT_OUTPUT', texts, final),
        restore: (text) => guard.restore(text),
        emit: (json, text, finishing) => this.released(json, text, finishing),
        blocked: () => this.onBlocked(),
      });
    }
    // A model silent for a whole keep-alive interval before its first chunk (a long time to first
    // token) gets the stream committed and pinged, so that clients and proxies do not time out; a
    // failure after that is an error event rather than a status.
    this.commitTimer = setTimeout(() => {
      if (this.started || this.raw.destroyed) return;
      this.begin(undefined);
      this.raw.write(': ping\n\n');
    }, deps.config.EDGE_STREAM_KEEPALIVE_MS);
  }

  /** Relays the stream to its end, reports it, and settles every timer and listener it set. */
  async run(): Promise<void> {
    const { signal } = this.completion;
    signal.addEventListener('abort', this.cancel, { once: true });
    try {
      // One try per executor replica: a replica lost before the stream's first event is replaced
      // by another (executor-replicas.ts); anything else ends the stream.
      await streamReplicaRetries
        .execute(() => this.attempt(), signal)
        .catch((error: unknown) => {
          throw error instanceof ReplicaLost ? error.failure : error;
        });
    } catch (error) {
      await this.failed(error);
    } finally {
      clearTimeout(this.commitTimer);
      if (this.keepAlive) clearInterval(this.keepAlive);
      signal.removeEventListener('abort', this.cancel);
      this.holdBack?.close();
    }
  }

  /** The executor's events: on a CompleteCalls stream, else a StreamComplete call of their own. */
  private events(): AsyncIterable<ExecuteStreamEventOutput> {
    const { deps, completion } = this;
    const callOptions = {
      deadlineMs: deps.config.EDGE_COMPLETION_DEADLINE_MS,
      requestId: completion.requestId,
      signal: this.stop ? AbortSignal.any([completion.signal, this.stop.signal]) : completion.signal,
      traceparent: completion.traceparent,
    };
    const events = deps.completions.stream('stream', completion.execute, { ...callOptions, window: STREAM_WINDOW });
    if (events) return events;
    const { metadata, callOptions: grpcOptions } = callMetadata(callOptions);
    this.call = withoutCallerStack(() => deps.executor.StreamComplete(completion.execute, metadata, grpcOptions));
    return this.call as AsyncIterable<ExecuteStreamEventOutput>;
  }

  /** One try on one executor replica. */
  private async attempt(): Promise<void> {
    const { completion } = this;
    let received = false;
    // Set at the end event. The loop then runs on to the stream's own end (its status follows at
    // once): leaving the loop early would destroy a StreamComplete call, which builds an
    // AbortError with its stack trace for every stream.
    let completed = false;
    try {
      for await (const event of this.events()) {
        received = true;
        if (completed) continue;
        if (event.start) this.onStart(event.start);
        if (this.holdBack) {
          if (event.rendered || event.chunk) {
            await this.holdBackEvent(event, this.holdBack);
            if (this.blocked) break;
            continue;
          }
          // The end: what is held is checked as the last window before the stream's last events.
          if (event.end) await this.holdBack.finish();
        }
        if (await this.relayEvent(event)) completed = true;
      }
    } catch (error) {
      // The answer is complete: what the stream does after its end event changes nothing.
      if (completed) return;
      // A blocked answer's call was cancelled on purpose.
      if (this.blocked) return this.endBlocked();
      if (!received && isReplicaLoss(error)) {
        completion.request.log.warn('executor replica lost before the stream began');
        throw new ReplicaLost(error);
      }
      throw error;
    }
    if (completed) return;
    if (this.blocked) return this.endBlocked();
    // The executor closed the stream without its end event: never end cleanly as if complete.
    throw GatewayError.of('upstream_error', 'The model stream ended unexpectedly.');
  }

  /** One event of the stream, with no output guardrail: its chunks written, its failure's count kept, its end reported; true at the end. */
  private async relayEvent(event: ExecuteStreamEventOutput): Promise<boolean> {
    const { completion, reply } = this;
    if (event.rendered) {
      // Chunks the executor rendered: written as they are.
      if (!this.started) this.begin(undefined);
      completion.firstTokenMs ??= reply.elapsedTime;
      this.streamedText += event.rendered.text ?? '';
      for (const chunk of event.rendered.chunks) {
        this.assembler?.addRendered(chunk.json ?? '');
        await this.relay(chunk.json ?? '', chunk.finishes === true);
      }
      this.armKeepAlive();
    } else if (event.chunk) {
      // A chunk as a message, from an executor that does not render: rendered by the wire.
      const chunk = event.chunk;
      if (!this.started) this.begin(chunk);
      completion.firstTokenMs ??= reply.elapsedTime;
      this.addText(chunk);
      this.assembler?.addChunk(chunk);
      await this.relay(this.renderer.chunkJson(chunk), chunk.choices.some(finishes));
      this.armKeepAlive();
    } else if (event.failure) {
      // The executor's own count of what was generated before it failed; its status follows.
      completion.usage = event.failure.usage;
      completion.provider = event.failure.provider ?? completion.provider;
      completion.deploymentId = event.failure.deployment_id || completion.deploymentId;
    } else if (event.end) {
      this.onEnd(event.end);
      return true;
    }
    return false;
  }

  /** One event's chunks under output guardrails: into the hold-back, which releases them once checked. */
  private async holdBackEvent(event: ExecuteStreamEventOutput, holdBack: StreamHoldBack): Promise<void> {
    if (event.rendered) {
      if (!this.started) this.begin(undefined);
      this.generatedText += event.rendered.text ?? '';
      for (const chunk of event.rendered.chunks) await holdBack.push(chunk.json ?? '');
    } else if (event.chunk) {
      if (!this.started) this.begin(event.chunk);
      this.generatedText += chunkText(event.chunk);
      await holdBack.push(this.renderer.chunkJson(event.chunk));
    }
    this.armKeepAlive();
  }

  /** A chunk the hold-back released: written as any other (the finishing one held for the wire's summary). */
  private async released(json: string, text: string, finishing: boolean): Promise<void> {
    if (this.raw.destroyed) return;
    this.completion.firstTokenMs ??= this.reply.elapsedTime;
    this.streamedText += text;
    await this.relay(json, finishing);
  }

  /** The guard blocked the answer: its content_filter chunk is held; the executor call is cancelled. */
  private onBlocked(): void {
    this.blocked = true;
    this.stop?.abort();
    this.call?.cancel();
  }

  /**
   * A blocked answer's last events, its executor call cancelled before its end: the wire's
   * content_filter ending (with the `gateway` summary), metered with what was generated.
   */
  private async endBlocked(): Promise<void> {
    const { completion } = this;
    completion.usage ??= await estimatedUsage(completion.execute, this.generatedText);
    this.report(completion, 'OUTCOME_COMPLETED');
    const held = this.held;
    this.held = undefined;
    if (!this.raw.destroyed) this.raw.end(this.renderer.end(held, completion.usage));
  }

  /** The executor's start event: the model that answers, after which attempts, and the completion's id. */
  private onStart(start: NonNullable<ExecuteStreamEventOutput['start']>): void {
    const { completion } = this;
    completion.answered = answeredModel(this.deps.catalog, completion.routing, start.model_id);
    completion.attempts = start.attempts;
    completion.provider = start.provider ?? '';
    completion.deploymentId = start.deployment_id ?? '';
    if (start.completion_id && !this.started) {
      this.renderer.named(start.completion_id, Number(start.created) || 0);
      // The chat completions wire names its chunks with it.
      if (completion.wire.route === '/v1/chat/completions') completion.responseId = start.completion_id;
    }
  }

  /** The end event: reported, and the stream's last events written. */
  private onEnd(end: StreamEndOutput): void {
    const { completion } = this;
    if (!this.started) this.begin(undefined);
    if (end.model_id) completion.answered = answeredModel(this.deps.catalog, completion.routing, end.model_id);
    if (end.attempts.length > 0) completion.attempts = end.attempts;
    completion.provider = end.provider ?? completion.provider;
    completion.deploymentId = end.deployment_id || completion.deploymentId;
    completion.usage = end.usage;
    if (this.assembler) completion.cacheAnswer = this.assembler.finish(end.usage);
    this.report(completion, 'OUTCOME_COMPLETED');
    const held = this.held;
    this.held = undefined;
    this.raw.end(this.renderer.end(held, end.usage));
  }

  /** The stream failed: reported, and answered with a status before the first byte, else an error event. */
  private async failed(error: unknown): Promise<void> {
    const { completion } = this;
    if (completion.signal.aborted) {
      // The client went away: meter what was generated before it left.
      completion.usage = await estimatedUsage(completion.execute, this.holdBack ? this.generatedText : this.streamedText);
      this.report(completion, 'OUTCOME_CANCELLED');
      return;
    }
    const requestError = toRequestError(error instanceof GatewayError ? error : GatewayError.fromServiceError(error));
    completion.errorCode = requestError.code ?? 'internal_error';
    completion.httpStatus = this.started ? 200 : requestError.status;
    if (!this.started) {
      // Nothing reached the caller: the request is metered as an error with what the executor
      // counted, if anything, and answered with a status.
      completion.usage ??= NO_USAGE;
      this.report(completion, 'OUTCOME_FAILED');
      throw requestError;
    }
    completion.request.log.warn({ err: (error as Error).message }, 'stream failed after the first byte');
    completion.usage ??= await estimatedUsage(completion.execute, this.holdBack ? this.generatedText : this.streamedText);
    this.report(completion, 'OUTCOME_FAILED');
    if (!this.raw.destroyed) this.raw.end(this.renderer.failure(requestError));
  }

  /** Writes the head: the stream is committed (200), and the reply hijacked from fastify. */
  private begin(first: ChatChunkOutput | undefined): void {
    if (this.started) return;
    this.started = true;
    clearTimeout(this.commitTimer);
    writeSseHead(this.completion, this.renderer, first);
    this.armKeepAlive();
  }

  /**
   * Events that arrive in one burst (several gRPC messages read at once) leave in one socket
   * write: the response is corked at the first event and uncorked in the same loop turn's check
   * phase (setImmediate), after the promise chain of the stream's iterator has handed over every
   * message already read; process.nextTick uncorked between two messages of one read.
   */
  private async write(text: string): Promise<void> {
    const raw = this.raw;
    if (!this.corked) {
      this.corked = true;
      raw.cork();
      setImmediate(this.uncork);
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
  }

  /** Writes a chunk's JSON, except the latest one that finishes a choice, which is held (see relayStream). */
  private async relay(json: string, finishing: boolean): Promise<void> {
    if (this.held !== undefined) {
      await this.write(this.renderer.event(this.held));
      this.held = undefined;
    }
    if (finishing) this.held = json;
    else await this.write(this.renderer.event(json));
  }

  private armKeepAlive(): void {
    if (this.keepAlive) this.keepAlive.refresh();
    else
      this.keepAlive = setInterval(() => {
        if (!this.raw.destroyed) this.raw.write(': ping\n\n');
      }, this.deps.config.EDGE_STREAM_KEEPALIVE_MS);
  }

  /** Adds a chunk's text (content and tool call arguments) to what the stream produced, for a stream cut short. */
  private addText(chunk: ChatChunkOutput): void {
    for (const choice of chunk.choices) {
      if (choice.delta?.content) this.streamedText += choice.delta.content;
      for (const toolCall of choice.delta?.tool_calls ?? []) this.streamedText += toolCall.function?.arguments ?? '';
    }
  }
}

/** A chunk's text (content and tool call arguments), as addText counts it. */
function chunkText(chunk: ChatChunkOutput): string {
  let text = '';
  for (const choice of chunk.choices) {
    text += choice.delta?.content ?? '';
    for (const toolCall of choice.delta?.tool_calls ?? []) text += toolCall.function?.arguments ?? '';
  }
  return text;
}

/** Whether a choice of a chunk finishes. */
function finishes(choice: ChatChunkOutput['choices'][number]): boolean {
  return Boolean(choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED');
}

/** Writes a stream's head (200, the SSE headers, the wire's, those the reply carries), hijacking the reply from fastify. */
export function writeSseHead(completion: Completion, renderer: StreamRenderer, first: ChatChunkOutput | undefined): void {
  const head: Record<string, string> = {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': completion.requestId,
  };
  renderer.begin(first, head);
  addCarriedHeaders(completion.reply, head);
  completion.reply.hijack();
  completion.reply.raw.writeHead(200, head);
}

/** Adds the headers set on the reply that a hijacked response must carry: CORS, rate limits, budget. */
function addCarriedHeaders(reply: FastifyReply, head: Record<string, string>): void {
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (name.startsWith('access-control-') || name === 'vary' || name.startsWith('x-ratelimit-') || name === BUDGET_REMAINING_HEADER)
      head[name] = String(value);
  }
}

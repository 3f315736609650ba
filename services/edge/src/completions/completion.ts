/**
 * One completion request as the pipeline carries it through its stages (completion-pipeline.ts):
 * created once per request, filled in by each stage, read by the next and by the wire that
 * renders its answer. Plain fields, so a request costs one object rather than a closure per step.
 *
 * And the wire of an ingress API: how a body of that API becomes the gateway's request, and how
 * the pipeline's answer, chunks and errors are written in that API's shape. Limits, routing,
 * execution and metering are the pipeline's, the same for every wire; an API the edge serves
 * (OpenAI's chat completions today, wire/chat-completions-wire.ts) is one CompletionWire plugged
 * into it.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { CallOptions } from '@gateway/grpc';
import type { Span } from '@gateway/observability';
import type {
  CacheEntryOutput,
  ChatChunkOutput,
  ChatResponseOutput,
  CheckKeyResponseOutput,
  EmbedResponseOutput,
  ExecuteRequest,
  ExecutionAttemptOutput,
  GuardDecisionOutput,
  ModelOutput,
  UsageOutput,
} from '@gateway/proto';
import { bearerKey } from '../auth/key-check.js';
import type { Reservation } from '../auth/reservations.js';
import type { EdgeDependencies } from '../dependencies.js';
import type { RequestError } from '../errors.js';
import type { ParsedChatRequest } from './parsed-request.js';
import { type Routing, routePolicy } from './model-resolution.js';
import type { WireErrors } from '../wire-errors.js';
import type { RequestGuard } from '../guardrails/guard-context.js';
import type { CacheUse } from '../cache/cache-use.js';

const NO_DECISIONS: readonly GuardDecisionOutput[] = Object.freeze([]);

/**
 * A request on its way through admit, route, execute and report. `Parsed` is what its wire's
 * parse returns: the gateway's request, plus whatever that wire needs to render its answer.
 */
export class Completion<Parsed extends ParsedChatRequest = ParsedChatRequest> {
  /** When the edge took the request (ms since the epoch), for its usage event. */
  readonly receivedAtMs = Date.now();
  /**
   * Drawn by the gateway for each request: metering's de-duplication key. Never the caller's
   * x-request-id: an id a caller could repeat or forge would let every request but one go unbilled.
   */
  readonly eventId = randomUUID();
  readonly requestId: string;
  readonly apiKey: string;
  /** The request in the gateway's own terms, whichever wire it came in on. */
  readonly parsed: Parsed;
  /** The caller's routing policy for `auto` (body or header), when it named one. */
  readonly callerPolicy: string | undefined;
  /** Aborted when the client goes away: cancels the calls made for it. */
  readonly abort = new AbortController();
  readonly signal: AbortSignal = this.abort.signal;

  /** A wire's `max_tokens` ceiling of an `auto` request, held back until the model is chosen. */
  maxTokensCeiling: number | undefined;
  /** The prompt tokens the request is checked and reserved with; exact, or an estimate. */
  promptTokens = 0;
  promptExact = false;
  /** The request's span (tracing on), and its W3C traceparent for the calls made for it. */
  span: Span | undefined;
  traceparent: string | undefined;

  // Admit: auth's decision and the tokens it reserved.
  decision!: CheckKeyResponseOutput;
  reservation!: Reservation;
  // Route: the chosen model, and the call to the executor with its fallbacks.
  routing!: Routing;
  execute!: ExecuteRequest;

  // Execute: what is observed as the answer comes; report reads it.
  /** The model that answered (the routed one, or a fallback). */
  answered!: ModelOutput;
  attempts: readonly ExecutionAttemptOutput[] = [];
  provider = '';
  /** The deployment that answered (ExecuteResponse.deployment_id); empty until one did. */
  deploymentId = '';
  /** The usage the answer reported, or what could be counted of an answer that did not finish. */
  usage: UsageOutput | undefined;
  /** Streams: when the first chunk of content left (reply.elapsedTime). */
  firstTokenMs: number | undefined;
  /** For a failed request: the error code its caller was answered with. */
  errorCode: string | undefined;
  /** For a failed request: the HTTP status its caller was answered with (a stream that started: 200). */
  httpStatus: number | undefined;
  /**
   * The answer's id as its caller sees it, for its usage event (the request log): drawn here for a
   * wire that names its answers itself (CompletionWire.newResponseId), else the upstream's once known
   * (chat completions).
   */
  responseId: string | undefined;

  /** Streams: the text and tool call arguments streamed, in order (the request log's bodies). */
  streamedText: string | undefined;

  /**
   * The guard of the request's answer, set after the input's check when a policy's output checks
   * apply to it or masked input is to be put back (guardrails/guard-context.ts); undefined
   * otherwise, and then nothing is checked.
   */
  guard: RequestGuard | undefined;
  /** The guardrail decisions made for the request (input, output), in order; empty when no policy applies. */
  guardDecisions: readonly GuardDecisionOutput[] = NO_DECISIONS;

  /** What the response cache does for the request (cache/response-cache.ts); undefined when its settings leave the cache off. */
  cache: CacheUse | undefined;
  /** Streams the cache keeps: the answer put back together once the stream completed (the relay sets it). */
  cacheAnswer: ChatResponseOutput | undefined;

  // Report: what the answer's own summary (the `gateway` object) shows.
  latencyMs = 0;
  costPico = 0n;

  constructor(
    readonly request: FastifyRequest,
    readonly reply: FastifyReply,
    readonly wire: CompletionWire<Parsed>,
  ) {
    this.requestId = request.id;
    this.apiKey = (wire.readKey ?? bearerKey)(request);
    this.parsed = wire.parse(request.body, request.headers);
    this.responseId = wire.newResponseId?.();
    this.callerPolicy = routePolicy(request, this.parsed);
  }
}

export type { WireErrors } from '../wire-errors.js';

/**
 * One ingress API, as the completion pipeline uses it. `Parsed` is the request its parse returns:
 * the gateway's own (ParsedChatRequest), which a wire may extend with what its renderers read.
 */
export interface CompletionWire<Parsed extends ParsedChatRequest = ParsedChatRequest> extends WireErrors {
  /** The route it serves (`/v1/chat/completions`), as spans and metrics name it. */
  readonly route: string;
  /** The GenAI operation name of its requests (`chat`). */
  readonly operation: string;
  /** Optional, for an API that names its answers itself (`resp_...`, `msg_...`): a new id, drawn when the request arrives. */
  newResponseId?(): string;
  /**
   * The API's `max_tokens` is a ceiling its clients cannot tune (Anthropic's, which Claude Code fills
   * with 32000): one above what the model can produce is lowered to it rather than refused.
   */
  readonly maxTokensCeiling?: boolean;
  /**
   * Optional: reads what the body refers to outside itself (stored state) and completes the body
   * with it, before the body is parsed; throws the RequestError to answer instead.
   */
  prepare?(request: FastifyRequest, deps: EdgeDependencies): Promise<void>;
  /**
   * Validates a body and converts it; throws a RequestError (400) naming the offending field. The
   * request's headers are there for wires that read some (the Messages API's `anthropic-beta`).
   */
  parse(body: unknown, headers: IncomingHttpHeaders): Parsed;
  /** Sets the answer's headers and returns the body of a whole (not streamed) answer. */
  renderWhole(completion: Completion<Parsed>, response: ChatResponseOutput): string;
  /**
   * Optional, for an API whose body is no chat (embeddings): the input tokens it is checked and
   * reserved with, an estimate or, with `exact`, the exact count (throws the RequestError of an
   * input too long for the named model). Absent: the chat prompt's tokens.
   */
  promptTokens?(catalog: EdgeDependencies['catalog'], parsed: Parsed, exact: boolean): Promise<{ tokens: number; exact: boolean }>;
  /**
   * Optional, for an API that is no chat completion (embeddings, whole only): its call to the
   * executor and the answer's rendering. Absent: Complete, rendered by renderWhole.
   */
  executeWhole?(deps: EdgeDependencies, completion: Completion<Parsed>, options: CallOptions): Promise<WholeAnswer>;
  /**
   * Optional, for an API that is no chat completion (embeddings): a kept answer of the response
   * cache as the answer to render. Absent: the kept chat answer, rendered by renderWhole.
   */
  cachedWhole?(completion: Completion<Parsed>, entry: CacheEntryOutput): WholeAnswer;
  /** The renderer of one streamed answer. */
  openStream(completion: Completion<Parsed>): StreamRenderer;
}

/** What an executor answered whole, as the pipeline reports it; `render` writes the body once it is reported. */
export interface WholeAnswer {
  /** The catalog id of the model that answered. */
  readonly model_id?: string;
  readonly provider?: string;
  /** The deployment that answered (ExecuteResponse.deployment_id). */
  readonly deployment_id?: string;
  readonly attempts?: readonly ExecutionAttemptOutput[];
  readonly usage?: UsageOutput | null;
  /** A chat answer (not embeddings): what its output guardrails check before it is rendered. */
  readonly response?: ChatResponseOutput;
  /** An embeddings answer: what the response cache keeps. */
  readonly embeddings?: EmbedResponseOutput;
  /** Sets the answer's headers and returns its body (after the report set the cost and latency); a large one may take turns of the event loop. */
  render(): string | Promise<string>;
}

/**
 * How one streamed answer is written. The relay (sse-relay.ts) owns the transport: when the head
 * goes out, batching, keep-alive, back-pressure, replicas; the renderer owns every byte of content.
 */
export interface StreamRenderer {
  /** The executor named the completion (its start event) before the head went out. */
  named(id: string, created: number): void;
  /** The head goes out: adds the wire's headers to it; `first` is the first chunk when one came with it. */
  begin(first: ChatChunkOutput | undefined, head: Record<string, string>): void;
  /** The event of a JSON chunk the executor rendered. */
  event(json: string): string;
  /** The JSON of a chunk the executor sent as a message. */
  chunkJson(chunk: ChatChunkOutput): string;
  /** The last events of a completed answer: the held-back chunk that finished it (if any), the usage, the end. */
  end(held: string | undefined, usage: UsageOutput | undefined): string;
  /** The last event of an answer that failed after its first byte. */
  failure(error: RequestError): string;
}

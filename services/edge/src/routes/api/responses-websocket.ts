/**
 * The Responses API's WebSocket mode (GET /v1/responses upgraded), as OpenAI serves it and Codex
 * speaks it (its built-in OpenAI provider opens it first and falls back to HTTP only when refused):
 * - the upgrade is authenticated as any request, by `Authorization: Bearer <key>`: an invalid key
 *   is refused with the HTTP 401 of POST /v1/responses, before any socket exists;
 * - client messages are JSON text frames. `{"type": "response.create", ...}` carries the body of a
 *   POST /v1/responses (its `stream` is implied); the server answers the same events as that
 *   request's SSE stream, one JSON object per text frame, ending with `response.completed`
 *   (or `.incomplete`, `.failed`). `{"type": "response.processed"}` (Codex's acknowledgement) is
 *   accepted and needs no answer. Responses run one after another, in the order asked.
 * - each response.create goes through POST /v1/responses itself, in-process (fastify's inject):
 *   the key's limits and budgets, routing, fallbacks, metering and storage are that route's. A
 *   refusal (400, 401, 429, 5xx...) is an `{"type": "error", "status", "error": {...}, "headers"}`
 *   event, as Codex reads it, and the socket stays open.
 * - chaining: the socket keeps its last response (input then output items) in memory, whatever its
 *   `store`, so `previous_response_id` naming it with only the new items (what Codex sends, stored
 *   or not) continues that conversation; any other id is the store's (responses-store.ts).
 *   `generate: false` (Codex's prewarm) answers an empty completed response without calling a
 *   model: a later request continues from its input.
 * - limits: a message larger than EDGE_WS_MAX_MESSAGE_BYTES closes the socket (1009); one idle
 *   for EDGE_WS_IDLE_TIMEOUT_MS is closed (1000); at EDGE_WS_MAX_LIFETIME_MS, once its running
 *   response is done, it gets the `websocket_connection_limit_reached` error event (Codex then
 *   opens a new socket) and is closed; pings every EDGE_WS_PING_INTERVAL_MS, and a socket that has
 *   not answered the previous one is dropped. Closing a socket stops its running response (the
 *   upstream call is cancelled) and drops what it held.
 *
 * One piece: one socket's life in one class (its queue of responses, its idle, lifetime and ping
 * timers, the reason it closes), with the route that opens it and the drain that ends every socket
 * at shutdown.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from '@fastify/websocket';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import { bearerKey, checkKey, noteKeyChecked } from '../../auth/key-check.js';
import type { EdgeDependencies } from '../../dependencies.js';
import { RequestError } from '../../errors.js';
import { inputItemsOf } from '../../wire/responses-store.js';
import { isObject, type JsonObject } from '../../wire/translated-request.js';

/** Responses a socket may have asked for beyond the running one; more is an error event. */
const MAX_QUEUED = 4;
/** Headers of a refusal an error event carries (what a client retries or backs off by). */
const ERROR_EVENT_HEADERS = /^(retry-after(-ms)?|x-ratelimit-.*|x-request-id|x-should-retry)$/;
/** The events that end a response (the renderer writes `type` first). */
const FINAL_EVENT = /^\{"type":"response\.(completed|incomplete|failed)"/;
/** Codex's code for "this socket reached its lifetime: open another". */
const LIFETIME_CODE = 'websocket_connection_limit_reached';

/** The last response a socket answered: its id and its conversation (input items, then output items). */
interface LastResponse {
  id: string;
  items: JsonObject[];
}

/**
 * Why a socket closed, each exported from 0: `client` (the client's close frame), `dropped` (the
 * connection lost without one: a client gone, or a proxy or load balancer cutting it), `idle`
 * (EDGE_WS_IDLE_TIMEOUT_MS), `lifetime` (EDGE_WS_MAX_LIFETIME_MS), `message_too_large`
 * (EDGE_WS_MAX_MESSAGE_BYTES, 1009), `unresponsive` (no answer to a ping), `shutdown` (the edge
 * stopping, its responses finished) and `terminated` (cut when the edge's shutdown budget was spent).
 */
export const WEBSOCKET_CLOSE_REASONS = ['client', 'dropped', 'idle', 'lifetime', 'message_too_large', 'unresponsive', 'shutdown', 'terminated'] as const;
type CloseReason = (typeof WEBSOCKET_CLOSE_REASONS)[number];

/** A socket's lifetime's buckets, in seconds: from a failed start to past the default hour. */
const LIFETIME_BUCKETS = [1, 5, 30, 60, 300, 600, 1800, 3600, 5400, 7200];

/** The socket metrics of an edge, as a table. */
// biome-ignore format: one metric a line, a table of name, help and labels
const socketMetricsTable = () => ({
  open: metric.gauge('gateway_responses_websockets_open', 'Responses WebSockets open on this edge.'),
  messages: metric.counterBy('gateway_responses_websocket_messages_total', 'Messages received on Responses WebSockets, by type: response.create, response.processed, invalid (not JSON, unknown type, binary).', 'type'),
  closed: metric.histogram('gateway_responses_websocket_duration_seconds', 'How long each Responses WebSocket was open, by why it closed: client, dropped (no close frame), idle, lifetime, message_too_large, unresponsive, shutdown, terminated.', LIFETIME_BUCKETS, ['reason'], WEBSOCKET_CLOSE_REASONS),
});
type SocketMetrics = ReturnType<typeof serviceMetrics<ReturnType<typeof socketMetricsTable>>>;
const socketMetricsOf = new WeakMap<prometheus.Registry, SocketMetrics>();

/** The socket metrics of an edge, made once per registry (several apps may share one in tests). */
function socketMetrics(registry: prometheus.Registry): SocketMetrics {
  const made = socketMetricsOf.get(registry) ?? serviceMetrics(registry, socketMetricsTable());
  socketMetricsOf.set(registry, made);
  return made;
}

/** An error event, as Codex reads one: the status, OpenAI's error object, and the headers that matter. */
function errorEvent(status: number, error: JsonObject, headers: Record<string, string> = {}): string {
  return JSON.stringify({ type: 'error', status, error, ...(Object.keys(headers).length > 0 ? { headers } : {}) });
}

/** The `data:` payloads of the complete SSE events in `buffer`, and what is left of it. */
function sseEvents(buffer: string): { events: string[]; rest: string } {
  const events: string[] = [];
  let start = 0;
  for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n', start)) {
    const data = buffer
      .slice(start, end)
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5));
    if (data.length > 0) events.push(data.join('\n'));
    start = end + 2;
  }
  return { events, rest: buffer.slice(start) };
}

/** One open Responses WebSocket. */
class ResponsesSocket {
  private last: LastResponse | undefined;
  /** The responses asked for, run one after another. */
  private queue: Promise<void> = Promise.resolve();
  private queued = 0;
  /** The running response: its abort (before its head), and its in-process reply (after). */
  private running: AbortController | undefined;
  private runningReply: { destroy(): void } | undefined;
  private expired = false;
  private shuttingDown = false;
  private closed = false;
  /** Why the edge closes it, once it decided to; a close it did not decide is the client's (or the network's). */
  private closeReason: CloseReason | undefined;
  private readonly openedAt = performance.now();
  /** Resolves once the socket closed. */
  readonly whenClosed: Promise<void>;
  private alive = true;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly lifetimeTimer: NodeJS.Timeout;
  private readonly pingTimer: NodeJS.Timeout;

  constructor(
    private readonly app: FastifyInstance,
    private readonly deps: EdgeDependencies,
    private readonly socket: WebSocket,
    private readonly upgrade: FastifyRequest,
    private readonly metrics: SocketMetrics,
  ) {
    const { config } = deps;
    metrics.open.inc();
    this.lifetimeTimer = setTimeout(() => this.expire(), config.EDGE_WS_MAX_LIFETIME_MS);
    this.pingTimer = setInterval(() => this.ping(), config.EDGE_WS_PING_INTERVAL_MS);
    this.armIdle();
    socket.on('message', (data, isBinary) => this.receive(data as Buffer, isBinary));
    socket.on('pong', () => {
      this.alive = true;
    });
    this.whenClosed = new Promise((resolve) => socket.once('close', () => resolve()));
    // A message over EDGE_WS_MAX_MESSAGE_BYTES: ws closes the socket (1009) and stops reading, so the
    // client's answering close frame never arrives (its close reads 1006): the error says why.
    socket.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.closeReason ??= 'message_too_large';
    });
    socket.once('close', (code: number) => this.dispose(code));
  }

  /**
   * The edge is shutting down: no new response is taken, the running and waiting ones finish, then
   * the socket closes (1001); the caller bounds the wait.
   */
  shutdown(): Promise<void> {
    this.shuttingDown = true;
    if (this.queued === 0) this.close('shutdown', 1001, 'server shutting down');
    return this.whenClosed;
  }

  /** Drops the socket at once (the shutdown's budget is spent). */
  terminate(): void {
    this.closeReason = 'terminated';
    this.socket.terminate();
  }

  /** A client message: one response to run, an acknowledgement, or an error event. */
  private receive(data: Buffer, isBinary: boolean): void {
    this.armIdle();
    const refuse = (message: string, code: string) => {
      this.metrics.messages.inc({ type: 'invalid' });
      this.send(errorEvent(400, { type: 'invalid_request_error', code, message, param: null }));
    };
    if (isBinary) {
      refuse('Binary messages are not supported: send each request as a JSON text message.', 'invalid_message');
      return;
    }
    let message: unknown;
    try {
      message = JSON.parse(data.toString('utf8'));
    } catch {
      refuse('The message is not valid JSON.', 'invalid_json');
      return;
    }
    if (!isObject(message)) {
      refuse('The message must be a JSON object with a `type`.', 'invalid_message');
      return;
    }
    if (message.type === 'response.processed') {
      this.metrics.messages.inc({ type: 'response.processed' });
      return;
    }
    if (message.type !== 'response.create') {
      refuse(`Unknown message type ${JSON.stringify(String(message.type ?? '')).slice(0, 80)}: expected 'response.create'.`, 'unknown_message_type');
      return;
    }
    this.metrics.messages.inc({ type: 'response.create' });
    if (this.shuttingDown) {
      this.send(
        errorEvent(503, { type: 'server_error', code: 'server_shutting_down', message: 'The server is shutting down: open a new connection.', param: null }),
      );
      return;
    }
    if (this.queued >= MAX_QUEUED) {
      this.send(
        errorEvent(429, {
          type: 'rate_limit_error',
          code: 'too_many_queued_responses',
          message: `At most ${MAX_QUEUED} responses may wait on one WebSocket: wait for response.completed before sending more.`,
          param: null,
        }),
      );
      return;
    }
    this.queued += 1;
    this.queue = this.queue
      .then(() => this.respond(message))
      .finally(() => {
        this.queued -= 1;
        this.afterResponse();
      });
  }

  /** Runs one response.create: continued from this socket's last response when it names it. */
  private async respond(message: JsonObject): Promise<void> {
    if (this.closed) return;
    const { type: _type, generate, ...body } = message;
    const input = inputItemsOf(body.input);
    const last = this.last;
    if (last && body.previous_response_id === last.id && input) {
      body.input = [...last.items, ...input];
      delete body.previous_response_id;
    }
    const conversation = inputItemsOf(body.input) ?? [];
    if (generate === false) {
      this.prewarm(body, conversation);
      return;
    }
    body.stream = true;
    const abort = new AbortController();
    this.running = abort;
    try {
      const answer = await this.app.inject({
        method: 'POST',
        url: '/v1/responses',
        headers: this.forwardedHeaders(),
        payload: JSON.stringify(body),
        payloadAsStream: true,
        signal: abort.signal,
      });
      // The in-process reply: destroying it is the pipeline's "the client went away" (the upstream
      // call is cancelled); the signal alone only stops the payload stream once the body was read.
      this.runningReply = (answer.raw as unknown as { res: { destroy(): void } }).res;
      if (abort.signal.aborted) this.runningReply.destroy();
      const stream = answer.stream();
      // Text, decoded across chunk boundaries (a character may be split between two chunks).
      stream.setEncoding('utf8');
      if (answer.statusCode !== 200) {
        let text = '';
        for await (const chunk of stream) text += chunk as string;
        this.send(this.refusalEvent(answer.statusCode, text, answer.headers));
        return;
      }
      let buffer = '';
      let ended: JsonObject | undefined;
      for await (const chunk of stream) {
        const { events, rest } = sseEvents(buffer + (chunk as string));
        buffer = rest;
        for (const event of events) {
          this.send(event);
          if (FINAL_EVENT.test(event)) ended = JSON.parse(event) as JsonObject;
        }
      }
      this.remember(ended, conversation);
    } catch (error) {
      // The socket closed (the run was aborted), or the in-process request failed before its head.
      if (!abort.signal.aborted) {
        this.deps.logger.warn({ err: { message: (error as Error).message } }, 'a Responses WebSocket request failed');
        this.send(errorEvent(500, { type: 'server_error', code: 'internal_error', message: 'The response could not be completed.', param: null }));
      }
    } finally {
      this.running = undefined;
      this.runningReply = undefined;
    }
  }

  /** `generate: false`: an empty completed response, its input kept for the next request to continue. */
  private prewarm(body: JsonObject, conversation: JsonObject[]): void {
    const id = `resp_${randomUUID().replaceAll('-', '')}`;
    const response = {
      id,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      error: null,
      incomplete_details: null,
      model: body.model ?? null,
      output: [],
      usage: { input_tokens: 0, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 0 },
    };
    this.send(JSON.stringify({ type: 'response.created', response: { ...response, status: 'in_progress', usage: null }, sequence_number: 0 }));
    this.send(JSON.stringify({ type: 'response.completed', response, sequence_number: 1 }));
    this.last = { id, items: conversation };
  }

  /** The conversation of a finished response, for the next request to continue; a failed one is forgotten. */
  private remember(ended: JsonObject | undefined, conversation: JsonObject[]): void {
    const response = ended && isObject(ended.response) ? ended.response : undefined;
    if (!response || ended?.type === 'response.failed' || typeof response.id !== 'string') {
      this.last = undefined;
      return;
    }
    const output = Array.isArray(response.output) ? (response.output as JsonObject[]) : [];
    this.last = { id: response.id, items: [...conversation, ...output] };
  }

  /** The error event of a refused request: its status, its error object and the headers a client acts on. */
  private refusalEvent(status: number, text: string, headers: Record<string, unknown>): string {
    let error: JsonObject = { type: 'server_error', code: null, message: 'The request failed.', param: null };
    try {
      const parsed: unknown = JSON.parse(text);
      if (isObject(parsed) && isObject(parsed.error)) error = parsed.error;
    } catch {
      // Not JSON: the general message above.
    }
    const kept: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) if (ERROR_EVENT_HEADERS.test(name) && value !== undefined) kept[name] = String(value);
    return errorEvent(status, error, kept);
  }

  /** The headers of the upgrade that the in-process request needs: the key, the trace, the client. */
  private forwardedHeaders(): Record<string, string> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    for (const name of ['authorization', 'traceparent', 'user-agent', 'openai-organization', 'openai-project']) {
      const value = this.upgrade.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    return headers;
  }

  private send(text: string): void {
    if (this.socket.readyState === this.socket.OPEN) this.socket.send(text);
  }

  /** Idle: closed when no response runs and nothing came for EDGE_WS_IDLE_TIMEOUT_MS. */
  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.queued === 0) this.close('idle', 1000, 'idle timeout');
    }, this.deps.config.EDGE_WS_IDLE_TIMEOUT_MS);
  }

  /** After a response: the lifetime's end if it passed meanwhile, else the idle timer again. */
  private afterResponse(): void {
    if (this.shuttingDown && this.queued === 0) this.close('shutdown', 1001, 'server shutting down');
    else if (this.expired && this.queued === 0) this.retire();
    else this.armIdle();
  }

  /** The socket's lifetime is over: retired now, or once its running responses are done. */
  private expire(): void {
    this.expired = true;
    if (this.queued === 0) this.retire();
  }

  private retire(): void {
    this.send(
      errorEvent(400, {
        type: 'invalid_request_error',
        code: LIFETIME_CODE,
        message: `Responses websocket connection limit reached (${Math.round(this.deps.config.EDGE_WS_MAX_LIFETIME_MS / 60_000)} minutes). Create a new websocket connection to continue.`,
        param: null,
      }),
    );
    this.close('lifetime', 1000, 'connection lifetime reached');
  }

  /** Closes the socket for `reason` (the first reason given is the one counted). */
  private close(reason: CloseReason, code: number, text: string): void {
    this.closeReason ??= reason;
    this.socket.close(code, text);
  }

  private ping(): void {
    if (!this.alive) {
      this.closeReason ??= 'unresponsive';
      this.socket.terminate();
      return;
    }
    // A socket closing (its close frame sent or received) is not pinged: ws throws on it.
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.alive = false;
    this.socket.ping();
  }

  /** Closed: the running response is cancelled, the timers stopped, the conversation dropped. */
  private dispose(code: number): void {
    this.closed = true;
    // 1006: no close frame came.
    const reason = this.closeReason ?? (code === 1006 ? 'dropped' : 'client');
    this.metrics.closed.observe({ reason }, (performance.now() - this.openedAt) / 1000);
    this.running?.abort();
    this.runningReply?.destroy();
    clearTimeout(this.idleTimer);
    clearTimeout(this.lifetimeTimer);
    clearInterval(this.pingTimer);
    this.last = undefined;
    this.metrics.open.dec();
  }
}

/** The open sockets of each app, for its shutdown. */
const openSockets = new WeakMap<FastifyInstance, Set<ResponsesSocket>>();

/**
 * Closes an app's Responses WebSockets for its shutdown: each takes no new response, lets its
 * running and waiting ones finish, and closes (1001); whatever is still open after `graceMs` is
 * dropped. The running responses are thereby metered and stored as any in-flight request is.
 */
export async function drainResponsesWebSockets(app: FastifyInstance, graceMs: number): Promise<void> {
  const sockets = [...(openSockets.get(app) ?? [])];
  if (sockets.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, graceMs);
  });
  await Promise.race([Promise.all(sockets.map((socket) => socket.shutdown())), expired]);
  clearTimeout(timer);
  for (const socket of openSockets.get(app) ?? []) socket.terminate();
}

/**
 * Registers GET /v1/responses: the WebSocket upgrade (its key checked first), and for a GET that
 * asks for no upgrade, the 405 of the other methods.
 */
export function registerResponsesWebSocket(app: FastifyInstance, deps: EdgeDependencies): void {
  const metrics = socketMetrics(deps.registry);
  const sockets = new Set<ResponsesSocket>();
  openSockets.set(app, sockets);
  app.route({
    method: 'GET',
    url: '/v1/responses',
    preValidation: async (request) => {
      if (!request.ws) return;
      noteKeyChecked(request);
      await checkKey(deps, bearerKey(request), request.id);
    },
    handler: async () => {
      throw new RequestError(405, 'Method not allowed. This endpoint accepts POST, or GET with a WebSocket upgrade.', {
        code: 'method_not_allowed',
        headers: { allow: 'POST' },
      });
    },
    wsHandler: (socket, request) => {
      const open = new ResponsesSocket(app, deps, socket, request, metrics);
      sockets.add(open);
      void open.whenClosed.then(() => sockets.delete(open));
    },
  });
}

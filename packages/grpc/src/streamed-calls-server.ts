/**
 * The server side of streamed calls: many small calls carried as messages on a few long-lived
 * bidirectional streams, each served by the unary RPC's own handler. The wire protocol (frames,
 * credit, cancel, drain, errors) is written up in proto/gateway/rpc/v1/STREAMED_CALLS.md.
 */
import * as grpc from '@grpc/grpc-js';
import { SendCredit } from './credit-window.js';
import { GatewayError } from './gateway-error.js';
import { errorFrame, METHODS_HEADER, type StreamedRequestOutput } from './streamed-call-frames.js';
import { toGatewayError, type ErrorReporter } from './server.js';

/** What a handler knows of the call it serves besides its request. */
export interface StreamedCallContext {
  /** Aborts when the caller cancels the call, or the stream that carries it ends or breaks. */
  readonly signal: AbortSignal;
  /** When the caller stops waiting, in Unix ms (from the request's `deadline_ms`); Infinity when it sent none. */
  readonly deadline: number;
  /** The caller's span, as a W3C traceparent (the request's `traceparent`), when it sent one. */
  readonly traceparent?: string;
}

/** The handler of each method a stream carries, by the method's oneof name: the unary RPC's own function. */
export type StreamedHandlers = Record<string, (request: never, context: StreamedCallContext) => Promise<unknown>>;

/** What the handler of a streamed call has besides its request. */
export interface StreamingCallContext<Event = unknown> extends StreamedCallContext {
  /**
   * Sends one event. Resolves when the next may be sent: at once while the caller's credit lasts
   * and the stream's buffer has room; otherwise once both allow it, or when the call is aborted
   * (check `signal` before producing more).
   */
  send(event: Event): Promise<void>;
}

/**
 * The handler of each streamed method, by its oneof name: it sends its events through the context
 * and resolves with the last one (sent with `last`, needing no credit); a throw after some events
 * ends the call with an error as a unary handler's throw does.
 */
export type StreamingHandlers = Record<string, (request: never, context: StreamingCallContext<never>) => Promise<unknown>>;

/** A bidirectional streaming handler serving StreamedHandlers, and its part in shutdown. */
export interface StreamedCallsService<Request, Response> {
  handler: grpc.handleBidiStreamingCall<Request, Response>;
  /**
   * Sends `drain` on every open stream (and on any opened later). Each stream ends, with OK, once
   * its caller half-closed it, or patienceMs passed, and every call it carried is answered.
   * Resolves when the streams open at the time have ended.
   */
  drain(patienceMs: number): Promise<void>;
  /** How many streams are open now, for a gauge. */
  readonly openStreams: number;
}

const RESOLVED = Promise.resolve();

/** A call being handled. */
interface RunningCall {
  readonly controller: AbortController;
  /** Events the handler may still send before waiting for credit. */
  readonly credit: SendCredit;
}

/** What every stream of one service shares. */
interface ServiceState {
  readonly handlers: StreamedHandlers;
  readonly streaming: StreamingHandlers;
  /** Every method a stream carries: the unary ones, then the streamed ones. */
  readonly names: readonly string[];
  readonly headers: grpc.Metadata;
  /** Names the RPC in reports of unexpected errors. */
  readonly method: string;
  readonly report?: ErrorReporter;
  readonly open: Set<ServedStream>;
  draining: boolean;
}

type ServerCall = grpc.ServerDuplexStream<unknown, unknown>;

/**
 * One served stream: the calls it carries, run concurrently and answered as they finish, and its
 * end once its caller half-closed it (or the drain's patience ran out) and nothing is in flight.
 */
class ServedStream {
  readonly finished: Promise<void>;
  readonly #call: ServerCall;
  readonly #state: ServiceState;
  /** The calls being handled, by call id: what a `cancel` or the stream's end aborts. */
  readonly #running = new Map<number, RunningCall>();
  #inFlight = 0;
  /** While the stream's buffer is full: resolves once it drained or the stream closed. */
  #writable: Promise<void> | undefined;
  #closing = false;
  #ended = false;
  #drainSent = false;
  #markFinished!: () => void;

  constructor(call: ServerCall, state: ServiceState) {
    this.#call = call;
    this.#state = state;
    this.finished = new Promise<void>((resolve) => {
      this.#markFinished = resolve;
    });
  }

  /** Takes the stream: headers at once, then every message as it arrives. */
  start(): void {
    const call = this.#call;
    this.#state.open.add(this);
    // Headers at once tell the caller the stream is open (until then it sends its calls unary),
    // and which methods it carries.
    call.sendMetadata(this.#state.headers.clone());
    if (this.#state.draining) this.notifyDrain();
    call.on('data', (message: StreamedRequestOutput) => this.#receive(message));
    // The caller half-closed: answer what is in flight, then end with OK.
    call.on('end', () => this.close());
    // The stream is gone: nobody waits for the calls it carried.
    const gone = () => {
      this.#abortAll();
      this.#finish();
    };
    call.on('cancelled', gone);
    call.on('error', gone);
    call.on('close', () => {
      if (!this.#ended) this.#abortAll();
      this.#finish();
    });
  }

  /** Sends the drain notice, once. */
  notifyDrain(): void {
    if (this.#drainSent) return;
    this.#drainSent = true;
    this.#send({ call_id: 0, drain: {} });
  }

  /** No more calls are expected: end the stream once every call in flight is answered. */
  close(): void {
    this.#closing = true;
    this.#endIfIdle();
  }

  #receive(message: StreamedRequestOutput): void {
    const callId = message.call_id ?? 0;
    if (message.cancel) {
      this.#running.get(callId)?.controller.abort();
      this.#running.delete(callId);
      return;
    }
    if (message.credit) {
      this.#running.get(callId)?.credit.grant(Number(message.credit.events ?? 0));
      return;
    }
    const name = this.#state.names.find((candidate) => message[candidate] !== undefined && message[candidate] !== null);
    if (!name) {
      this.#send(errorFrame(callId, new GatewayError(grpc.status.INVALID_ARGUMENT, 'invalid_request', 'The call names no method this service serves.')));
      return;
    }
    this.#run(callId, name, message);
  }

  /** Runs one call's handler and answers it, unless it was cancelled meanwhile. */
  #run(callId: number, name: string, message: StreamedRequestOutput): void {
    const { handlers, streaming } = this.#state;
    const request = message[name] as { request_id?: unknown };
    const controller = new AbortController();
    const entry: RunningCall = { controller, credit: new SendCredit(Number(message.window ?? 0)) };
    this.#running.set(callId, entry);
    const deadline = message.deadline_ms ? Date.now() + Number(message.deadline_ms) : Number.POSITIVE_INFINITY;
    this.#inFlight += 1;
    const streamed = Object.hasOwn(streaming, name) ? streaming[name] : undefined;
    const context = { signal: controller.signal, deadline, traceparent: message.traceparent || undefined };
    const handled = streamed
      ? streamed(request as never, { ...context, send: (event: never) => this.#sendEvent(entry, callId, name, event) })
      : handlers[name]!(request as never, context);
    handled
      .then(
        (response) => {
          if (!controller.signal.aborted)
            this.#send(streamed !== undefined ? { call_id: callId, [name]: response, last: true } : { call_id: callId, [name]: response });
        },
        (error: unknown) => {
          // A cancelled call's caller has forgotten it: nothing to answer.
          if (controller.signal.aborted) return;
          const requestId = typeof request.request_id === 'string' ? request.request_id : undefined;
          this.#send(errorFrame(callId, toGatewayError(error, `${this.#state.method}.${name}`, this.#state.report, requestId)));
        },
      )
      .finally(() => {
        if (this.#running.get(callId) === entry) this.#running.delete(callId);
        this.#inFlight -= 1;
        this.#endIfIdle();
      });
  }

  /** One event of a streamed call, within its credit and the stream's buffer. */
  #sendEvent(entry: RunningCall, callId: number, name: string, event: unknown): Promise<void> {
    const signal = entry.controller.signal;
    if (signal.aborted) return RESOLVED;
    if (!entry.credit.take()) return entry.credit.whenGranted(signal).then(() => this.#sendEvent(entry, callId, name, event));
    // A full buffer is waited out; a stream already over has nothing to wait for.
    return this.#send({ call_id: callId, [name]: event }) || this.#ended || this.#call.cancelled ? RESOLVED : this.#waitWritable();
  }

  /** Writes a message; false when the stream's buffer is full (or the stream is over). */
  #send(message: Record<string, unknown>): boolean {
    if (this.#ended || this.#call.cancelled) return false;
    return this.#call.write(message);
  }

  #waitWritable(): Promise<void> {
    this.#writable ??= new Promise<void>((resolve) => {
      const done = () => {
        this.#call.off('drain', done);
        this.#call.off('close', done);
        this.#writable = undefined;
        resolve();
      };
      this.#call.on('drain', done);
      this.#call.on('close', done);
    });
    return this.#writable;
  }

  #endIfIdle(): void {
    if (this.#ended || !this.#closing || this.#inFlight > 0) return;
    this.#call.end();
    this.#finish();
  }

  #finish(): void {
    this.#ended = true;
    this.#state.open.delete(this);
    this.#markFinished();
  }

  #abortAll(): void {
    for (const entry of this.#running.values()) entry.controller.abort();
    this.#running.clear();
  }
}

/**
 * Serves calls carried on a bidirectional stream with the given handlers. Each message is handled
 * as soon as it arrives: calls run concurrently and are answered as they finish. A handler's
 * thrown error is converted exactly as `unary` converts it, so both paths answer alike. `method`
 * names the RPC in reports of unexpected errors.
 */
export function serveStreamedCalls<Request, Response>(
  handlers: StreamedHandlers,
  method: string,
  report?: ErrorReporter,
  streaming: StreamingHandlers = {},
): StreamedCallsService<Request, Response> {
  const names = [...Object.keys(handlers), ...Object.keys(streaming)];
  const headers = new grpc.Metadata();
  headers.set(METHODS_HEADER, names.join(','));
  const state: ServiceState = { handlers, streaming, names, headers, method, report, open: new Set(), draining: false };
  return {
    handler: (call) => new ServedStream(call as unknown as ServerCall, state).start(),
    get openStreams() {
      return state.open.size;
    },
    drain: async (patienceMs) => {
      state.draining = true;
      const streams = [...state.open];
      for (const stream of streams) stream.notifyDrain();
      // A caller that does not half-close in time (one that does not know `drain`) has its stream
      // ended once its calls are answered; a call it sends after that has an unknown outcome.
      const patience = setTimeout(() => {
        for (const stream of state.open) stream.close();
      }, patienceMs);
      patience.unref();
      await Promise.all(streams.map((stream) => stream.finished));
      clearTimeout(patience);
    },
  };
}

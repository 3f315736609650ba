/**
 * Many small calls carried as messages on a few long-lived bidirectional streams instead of one
 * unary call each. A unary call costs a new HTTP/2 stream, headers, a message and trailers on both
 * sides; a message on an open stream costs the message alone (about a quarter of the CPU per call
 * on each side, measured with grpc-js 1.14).
 *
 * The wire convention (gateway.auth.v1.Decide follows it): a request message holds `call_id`
 * (chosen by the caller, positive) and, in a oneof, one method's request under the method's name.
 * A response holds the same `call_id` and, in a oneof named `result`, the method's response under
 * the same name, or `error` (a status code and an ErrorInfo: the call failed, as a non-OK status
 * would end the unary call), or `drain` with call id 0 (the server is shutting down: send no more,
 * half-close, open another stream; every call sent before is still answered).
 *
 * Two optional parts, for calls whose work is worth stopping (an upstream model call): a request
 * may carry `deadline_ms`, the time its caller waits for the answer, and the member `cancel` in
 * the oneof instead of a method: the caller gave up on `call_id` (its deadline passed, its client
 * went away), so the handler's signal aborts and no answer is sent. A stream that ends or breaks
 * aborts every call it carried, as a cancelled unary call does.
 *
 * Streamed calls (a server-streaming RPC carried the same way): the method's request under its
 * name, with `window`, the number of events the server may send before it waits for more credit
 * (0: no limit). Each event is an answer with the call's id and the method's name; the last one
 * has `last` set (or an `error` ends the call instead). The caller grants more events with the
 * member `credit` (`{events}`) as its consumer takes them, so a slow consumer holds back the
 * producer of each call while the other calls on the stream flow.
 */
import * as grpc from '@grpc/grpc-js';
import { ExponentialBackoff, noJitterGenerator, type GeneratorFn, type IBackoff } from 'cockatiel';
import type { ErrorInfoOutput } from '@gateway/proto';
import { GatewayError } from './gateway-error.js';
import type { CallOptions } from './client.js';
import { watchAddresses } from './address-resolver.js';
import { toGatewayError, type ErrorReporter } from './server.js';

/** A response message as received. */
interface StreamedResponseOutput {
  call_id?: number;
  result?: string;
  error?: { code?: number; info?: ErrorInfoOutput | null } | null;
  last?: boolean;
  [member: string]: unknown;
}

/** A request message as received. */
interface StreamedRequestOutput {
  call_id?: number;
  deadline_ms?: number;
  window?: number;
  traceparent?: string;
  cancel?: object | null;
  credit?: { events?: number } | null;
  [member: string]: unknown;
}

const RESOLVED = Promise.resolve();

/**
 * The response header naming the methods a stream carries (`complete,stream`): a caller sends a
 * streamed call only on a stream that names its method, so that it keeps working against a server
 * of an earlier version during a rolling upgrade.
 */
const METHODS_HEADER = 'gateway-streamed-methods';

/** The failure of a call whose stream ended before its answer came: its outcome is unknown. */
function streamLost(cause?: unknown): GatewayError {
  return new GatewayError(grpc.status.UNAVAILABLE, 'service_unavailable', 'An internal service is unavailable.', { retryable: true, cause });
}

// Server side ----------------------------------------------------------------------------------

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

/** A call being handled. */
interface RunningCall {
  readonly controller: AbortController;
  /** Events the handler may still send before waiting; Infinity without flow control. */
  credit: number;
  /** Wakes a handler waiting for credit. */
  wake?: () => void;
}

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

/** One served stream. */
interface ServedStream {
  /** Sends the drain notice, once. */
  notifyDrain(): void;
  /** No more calls are expected: end the stream once every call in flight is answered. */
  close(): void;
  readonly finished: Promise<void>;
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
  const open = new Set<ServedStream>();
  let draining = false;

  const handler: grpc.handleBidiStreamingCall<Request, Response> = (call) => {
    let inFlight = 0;
    /** The calls being handled, by call id: what a `cancel` or the stream's end aborts. */
    const running = new Map<number, RunningCall>();
    const abortAll = () => {
      for (const entry of running.values()) entry.controller.abort();
      running.clear();
    };
    /** While the stream's buffer is full: resolves once it drained or the stream closed. */
    let writable: Promise<void> | undefined;
    const waitWritable = () => {
      writable ??= new Promise<void>((resolve) => {
        const done = () => {
          call.off('drain', done);
          call.off('close', done);
          writable = undefined;
          resolve();
        };
        call.on('drain', done);
        call.on('close', done);
      });
      return writable;
    };
    let closing = false;
    let ended = false;
    let drainSent = false;
    let markFinished!: () => void;
    const finished = new Promise<void>((resolve) => {
      markFinished = resolve;
    });
    const finish = () => {
      ended = true;
      open.delete(stream);
      markFinished();
    };
    /** Writes a message; false when the stream's buffer is full (or the stream is over). */
    const send = (message: Record<string, unknown>): boolean => {
      if (ended || call.cancelled) return false;
      return call.write(message as Response);
    };
    const endIfIdle = () => {
      if (ended || !closing || inFlight > 0) return;
      call.end();
      finish();
    };
    const stream: ServedStream = {
      notifyDrain() {
        if (drainSent) return;
        drainSent = true;
        send({ call_id: 0, drain: {} });
      },
      close() {
        closing = true;
        endIfIdle();
      },
      finished,
    };
    open.add(stream);
    // Headers at once tell the caller the stream is open (until then it sends its calls unary),
    // and which methods it carries.
    call.sendMetadata(headers.clone());
    if (draining) stream.notifyDrain();

    call.on('data', (message: StreamedRequestOutput) => {
      const callId = message.call_id ?? 0;
      if (message.cancel) {
        running.get(callId)?.controller.abort();
        running.delete(callId);
        return;
      }
      if (message.credit) {
        const entry = running.get(callId);
        if (entry) {
          entry.credit += Number(message.credit.events ?? 0);
          entry.wake?.();
        }
        return;
      }
      const name = names.find((candidate) => message[candidate] !== undefined && message[candidate] !== null);
      if (!name) {
        const refusal = new GatewayError(grpc.status.INVALID_ARGUMENT, 'invalid_request', 'The call names no method this service serves.');
        send({ call_id: callId, error: { code: refusal.code, info: refusal.toErrorInfo() } });
        return;
      }
      const request = message[name] as { request_id?: unknown };
      const controller = new AbortController();
      const entry: RunningCall = { controller, credit: Number(message.window ?? 0) || Number.POSITIVE_INFINITY };
      running.set(callId, entry);
      const deadline = message.deadline_ms ? Date.now() + Number(message.deadline_ms) : Number.POSITIVE_INFINITY;
      inFlight += 1;
      const streamed = Object.hasOwn(streaming, name) ? streaming[name] : undefined;
      const traceparent = message.traceparent || undefined;
      const handled = streamed
        ? streamed(request as never, { signal: controller.signal, deadline, traceparent, send: (event: never) => sendEvent(entry, callId, name, event) })
        : handlers[name]!(request as never, { signal: controller.signal, deadline, traceparent });
      handled
        .then(
          (response) => {
            if (!controller.signal.aborted)
              send(streamed !== undefined ? { call_id: callId, [name]: response, last: true } : { call_id: callId, [name]: response });
          },
          (error: unknown) => {
            // A cancelled call's caller has forgotten it: nothing to answer.
            if (controller.signal.aborted) return;
            const failure = toGatewayError(error, `${method}.${name}`, report, typeof request.request_id === 'string' ? request.request_id : undefined);
            send({ call_id: callId, error: { code: failure.code, info: failure.toErrorInfo() } });
          },
        )
        .finally(() => {
          if (running.get(callId) === entry) running.delete(callId);
          inFlight -= 1;
          endIfIdle();
        });
    });
    /** One event of a streamed call, within its credit and the stream's buffer. */
    const sendEvent = (entry: RunningCall, callId: number, name: string, event: unknown): Promise<void> => {
      if (entry.controller.signal.aborted) return RESOLVED;
      if (entry.credit <= 0) {
        return new Promise<void>((resolve) => {
          const signal = entry.controller.signal;
          const wake = () => {
            entry.wake = undefined;
            signal.removeEventListener('abort', wake);
            resolve();
          };
          entry.wake = wake;
          signal.addEventListener('abort', wake, { once: true });
        }).then(() => sendEvent(entry, callId, name, event));
      }
      entry.credit -= 1;
      // A full buffer is waited out; a stream already over has nothing to wait for.
      return send({ call_id: callId, [name]: event }) || ended || call.cancelled ? RESOLVED : waitWritable();
    };
    // The caller half-closed: answer what is in flight, then end with OK.
    call.on('end', () => stream.close());
    // The stream is gone: nobody waits for the calls it carried.
    const gone = () => {
      abortAll();
      finish();
    };
    call.on('cancelled', gone);
    call.on('error', gone);
    call.on('close', () => {
      if (!ended) abortAll();
      finish();
    });
  };

  return {
    handler,
    get openStreams() {
      return open.size;
    },
    drain: async (patienceMs) => {
      draining = true;
      const streams = [...open];
      for (const stream of streams) stream.notifyDrain();
      // A caller that does not half-close in time (one that does not know `drain`) has its stream
      // ended once its calls are answered; a call it sends after that has an unknown outcome.
      const patience = setTimeout(() => {
        for (const stream of open) stream.close();
      }, patienceMs);
      patience.unref();
      await Promise.all(streams.map((stream) => stream.finished));
      clearTimeout(patience);
    },
  };
}

// Client side ----------------------------------------------------------------------------------

/** The request and response type of each method a stream carries, by the method's oneof name. */
export type StreamedMethods = Record<string, [request: unknown, response: unknown]>;

/** Which way a call went. */
export type StreamedCallPath = 'stream' | 'unary';

/** How a StreamedCalls opens, spreads and replaces its streams. */
export interface StreamedCallsOptions<Methods extends StreamedMethods> {
  /**
   * Opens one stream on a long-lived channel (`() => client.Decide()`), without a deadline. With a
   * round_robin channel, each stream goes to the next ready replica.
   */
  open: () => grpc.ClientDuplexStream<never, unknown>;
  /**
   * How many streams to keep open; 0 sends every call unary. With `target`, the smallest multiple
   * of the number of addresses the target resolves to that is at least this, so that each replica
   * carries as many streams, and as many calls, as any other.
   */
  streams: number;
  /**
   * The channel's target (`dns:///executors:50053`). When it is a DNS name, the streams spread
   * again as soon as its address set changes (see address-resolver.ts): a replica added gets its
   * share within seconds, and one removed from the name is left by its streams at once (its calls
   * in flight still finish), rather than at the streams' age.
   */
  target?: string;
  /** The unary call of each method, used while no stream is open (and never to resend a call). */
  unary: { [Name in keyof Methods]: (request: Methods[Name][0], options: CallOptions) => Promise<Methods[Name][1]> };
  /**
   * Delay before reopening a stream that broke or failed to open, doubling per attempt since the
   * slot's last open stream, up to maxMs, each one ±20% (default 100 ms to 2 s, like the channel's
   * reconnects).
   */
  reopenBackoff?: { initialMs: number; maxMs: number };
  /**
   * A stream is replaced after about this long (±10%), so that streams spread again over replicas
   * that came back after the streams were opened.
   */
  maxStreamAgeMs?: number;
  /**
   * The streams opened at the start are replaced once between half this and this long after they
   * opened, whatever maxStreamAgeMs says: a replica that was still connecting when they opened (all
   * of them then went to the replicas already up) gets its share within seconds, not at their age.
   */
  respreadAfterStartMs?: number;
  /**
   * Whether the server takes `deadline_ms` and `cancel` (see the file header): each call then
   * carries its deadline, and a call given up on (deadline, abort) is cancelled on the server.
   */
  cancellable?: boolean;
  /** Told each call's path, for metrics (a streamed call that finds no stream open is counted unary). */
  onCall?: (method: string, path: StreamedCallPath) => void;
  /** Told when an open stream broke (not when it was drained or replaced). */
  onStreamBroken?: (error: GatewayError) => void;
}

/** A call waiting for its answer, or a streamed call for its next events. */
interface PendingCall {
  method: string;
  /** A whole call's promise. */
  resolve?(response: unknown): void;
  reject?(error: GatewayError): void;
  /** A streamed call's events. */
  events?: CallEvents<unknown>;
  timer: NodeJS.Timeout;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/**
 * The events of one streamed call, as an async iterator. Events are queued as they arrive (at
 * most the call's window ahead of the consumer, which the server respects); each time the
 * consumer has taken half the window, that much credit is granted back. Leaving the iteration
 * early (break, throw, return()) cancels the call on the server.
 */
class CallEvents<Event> implements AsyncIterableIterator<Event> {
  readonly #queue: Event[] = [];
  readonly #grantEvery: number;
  readonly #grant: (events: number) => void;
  readonly #giveUp: () => void;
  #done = false;
  #error: GatewayError | undefined;
  #waiting: { resolve(result: IteratorResult<Event>): void; reject(error: GatewayError): void } | undefined;
  /** The consumer holds an event it has not finished with (it has not asked for the next). */
  #holding = false;
  #taken = 0;

  constructor(window: number, grant: (events: number) => void, giveUp: () => void) {
    this.#grantEvery = window > 0 ? Math.max(1, Math.floor(window / 2)) : Number.POSITIVE_INFINITY;
    this.#grant = grant;
    this.#giveUp = giveUp;
  }

  push(event: Event): void {
    if (this.#done) return;
    const waiting = this.#waiting;
    if (!waiting) {
      this.#queue.push(event);
      return;
    }
    this.#waiting = undefined;
    this.#holding = true;
    waiting.resolve({ value: event, done: false });
  }

  /** No event follows: the iteration ends after the queued ones, with `error` when given. */
  end(error?: GatewayError): void {
    if (this.#done) return;
    this.#done = true;
    this.#error = error;
    const waiting = this.#waiting;
    if (!waiting) return;
    this.#waiting = undefined;
    if (error) waiting.reject(error);
    else waiting.resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<Event>> {
    if (this.#holding) {
      this.#holding = false;
      this.#taken += 1;
      if (this.#taken >= this.#grantEvery && !this.#done) {
        this.#grant(this.#taken);
        this.#taken = 0;
      }
    }
    if (this.#queue.length > 0) {
      this.#holding = true;
      return Promise.resolve({ value: this.#queue.shift()!, done: false });
    }
    if (this.#done) {
      const error = this.#error;
      this.#error = undefined;
      return error ? Promise.reject(error) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<Event>> {
    if (!this.#done) this.#giveUp();
    this.#done = true;
    this.#error = undefined;
    this.#queue.length = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Event> {
    return this;
  }
}

/** One stream of a StreamedCalls. */
interface ClientStream {
  readonly call: grpc.ClientDuplexStream<Record<string, unknown>, StreamedResponseOutput>;
  readonly pending: Map<number, PendingCall>;
  /** Its response headers came: the server took it. */
  open: boolean;
  /** The methods the server said it carries; empty when it did not say (whole calls only). */
  methods: ReadonlySet<string>;
  /** Takes no new calls: the server asked to drain, it is being replaced, or it ended. */
  retired: boolean;
  /** Half-closed (retired, and its last call answered): nothing more can be written on it. */
  halfClosed: boolean;
  ageTimer?: NodeJS.Timeout;
}

const DEFAULT_BACKOFF = { initialMs: 100, maxMs: 2_000 };
const NO_METHODS: ReadonlySet<string> = new Set();
const DEFAULT_MAX_STREAM_AGE_MS = 5 * 60_000;
/**
 * How long after a change of the address set the streams are replaced: the channel connects to
 * the new addresses meanwhile (a round_robin channel gives a stream only to a connected one).
 */
const RESPREAD_DELAY_MS = 1_000;

/**
 * cockatiel's doubling delay spread over ±20%, so that the streams of many callers broken by one
 * replica's restart do not all come back at the same instant. None of cockatiel's own generators
 * does this: full and half jitter only ever shorten the delay.
 */
const spreadTwentyPercent: GeneratorFn<number> = (attempts, options) => {
  const [delay, next] = noJitterGenerator(attempts, options);
  return [delay * (0.8 + Math.random() * 0.4), next];
};

/**
 * Calls carried on a few long-lived streams, correlated by call id. Each call keeps its own
 * deadline and AbortSignal, enforced here since the stream has none. When a stream breaks, every
 * call waiting on it is rejected with UNAVAILABLE (its outcome is unknown, so it is never resent)
 * and the stream is reopened with backoff; while no stream is open, calls go unary. A call
 * rejects with a GatewayError, as `callUnary` does.
 */
export class StreamedCalls<Methods extends StreamedMethods, Streams extends StreamedMethods = Record<never, [unknown, unknown]>> {
  readonly #options: StreamedCallsOptions<Methods>;
  /**
   * The delays between reopenings are cockatiel's ExponentialBackoff, but the reopening is ours,
   * not its retry(), which runs a function and retries its rejections counting from its start: a
   * slot has no such call. Its attempts count from its last stream that opened, which may break
   * minutes later and then waits the first delay before it is reopened, and a drained or aged
   * stream is replaced at once. (The executor's deployment breaker uses cockatiel the same way.)
   */
  readonly #reopenBackoff: ExponentialBackoff<number>;
  /** The current stream of each slot; undefined while the slot waits to reopen. */
  readonly #slots: Array<ClientStream | undefined>;
  /** The last delay of each slot since its last stream opened; undefined: the next is the first. */
  readonly #slotBackoffs: Array<IBackoff<unknown> | undefined>;
  readonly #reopenTimers = new Set<NodeJS.Timeout>();
  /** Every stream not yet ended: the current ones and those draining. */
  readonly #live = new Set<ClientStream>();
  #nextCallId = 1;
  #nextSlot = 0;
  #closed = false;
  #allSlotsStarted = false;
  /** Streams of the first generation still to be given the start's respread age. */
  #firstGeneration = 0;
  /** How many addresses the target resolves to (0: not known, or not a DNS name). */
  #addressCount = 0;
  #respreadTimer: NodeJS.Timeout | undefined;
  readonly #unwatch: () => void;

  constructor(options: StreamedCallsOptions<Methods>) {
    this.#options = options;
    const { initialMs, maxMs } = options.reopenBackoff ?? DEFAULT_BACKOFF;
    this.#reopenBackoff = new ExponentialBackoff({ initialDelay: initialMs, maxDelay: maxMs, exponent: 2, generator: spreadTwentyPercent });
    this.#slots = Array.from({ length: Math.max(0, options.streams) }, () => undefined);
    this.#slotBackoffs = this.#slots.map(() => undefined);
    // One stream first; once it is open, the channel has connected to the replicas it resolved,
    // and all the streams are opened together (that first one replaced), so that round robin gives
    // each replica its share. Opened at once from the start, they would all wait for, and go to,
    // the first replica to connect.
    if (this.#slots.length > 0) this.#openSlot(0);
    this.#unwatch =
      options.target && options.streams > 0 ? watchAddresses(options.target, (addresses) => this.#addressesChanged(addresses.length)) : () => undefined;
  }

  /** How many streams are open and taking calls. */
  get openStreams(): number {
    return this.#slots.filter((stream) => stream?.open && !stream.retired).length;
  }

  /** Calls a method: on an open stream when there is one, otherwise unary. */
  call<Name extends keyof Methods & string>(method: Name, request: Methods[Name][0], options: CallOptions): Promise<Methods[Name][1]> {
    const stream = this.#pickStream();
    this.#options.onCall?.(method, stream ? 'stream' : 'unary');
    if (!stream) return this.#options.unary[method](request, options);
    if (options.signal?.aborted) return Promise.reject(GatewayError.fromServiceError({ code: grpc.status.CANCELLED }));
    const callId = this.#nextCallId;
    this.#nextCallId += 1;
    return new Promise<Methods[Name][1]>((resolve, reject) => {
      const pending: PendingCall = {
        method,
        resolve: resolve as (response: unknown) => void,
        reject,
        timer: setTimeout(
          () => this.#answer(stream, callId, undefined, GatewayError.fromServiceError({ code: grpc.status.DEADLINE_EXCEEDED })),
          options.deadlineMs,
        ),
        signal: options.signal,
      };
      if (options.signal) {
        pending.onAbort = () => this.#answer(stream, callId, undefined, GatewayError.fromServiceError({ code: grpc.status.CANCELLED }));
        options.signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      stream.pending.set(callId, pending);
      stream.call.write(
        this.#options.cancellable
          ? { call_id: callId, deadline_ms: options.deadlineMs, traceparent: options.traceparent, [method]: request }
          : { call_id: callId, traceparent: options.traceparent, [method]: request },
      );
    });
  }

  /**
   * Starts a streamed call on an open stream and returns its events, the last one included; a
   * failure (from the server, the deadline, the signal, a lost stream) rejects the next read.
   * `window` events may be in flight ahead of the consumer (0: no limit). Undefined while no
   * stream is open: the caller then makes the server-streaming RPC itself. Needs a server that
   * takes `cancel` (see `cancellable`).
   */
  stream<Name extends keyof Streams & string>(
    method: Name,
    request: Streams[Name][0],
    options: CallOptions & { window: number },
  ): AsyncIterableIterator<Streams[Name][1]> | undefined {
    const stream = this.#pickStream(method);
    this.#options.onCall?.(method, stream ? 'stream' : 'unary');
    if (!stream) return undefined;
    const callId = this.#nextCallId;
    this.#nextCallId += 1;
    const cancelled = () => GatewayError.fromServiceError({ code: grpc.status.CANCELLED });
    const events = new CallEvents<Streams[Name][1]>(
      options.window,
      (granted) => {
        if (!stream.halfClosed && this.#live.has(stream)) stream.call.write({ call_id: callId, credit: { events: granted } });
      },
      () => this.#answer(stream, callId, undefined, cancelled()),
    );
    if (options.signal?.aborted) {
      events.end(cancelled());
      return events;
    }
    const pending: PendingCall = {
      method,
      events,
      timer: setTimeout(
        () => this.#answer(stream, callId, undefined, GatewayError.fromServiceError({ code: grpc.status.DEADLINE_EXCEEDED })),
        options.deadlineMs,
      ),
      signal: options.signal,
    };
    if (options.signal) {
      pending.onAbort = () => this.#answer(stream, callId, undefined, cancelled());
      options.signal.addEventListener('abort', pending.onAbort, { once: true });
    }
    stream.pending.set(callId, pending);
    stream.call.write({ call_id: callId, deadline_ms: options.deadlineMs, window: options.window, traceparent: options.traceparent, [method]: request });
    return events;
  }

  /**
   * Stops opening streams and half-closes the open ones, so calls already sent are answered; after
   * graceMs, streams still open are cancelled and their calls rejected. Calls made after close go
   * unary.
   */
  async close(graceMs = 2_000): Promise<void> {
    this.#closed = true;
    this.#unwatch();
    clearTimeout(this.#respreadTimer);
    for (const timer of this.#reopenTimers) clearTimeout(timer);
    this.#reopenTimers.clear();
    const streams = [...this.#live];
    for (const stream of streams) this.#retire(stream);
    if (streams.length === 0) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        for (const stream of this.#live) stream.call.cancel();
        resolve();
      }, graceMs);
      const check = setInterval(() => {
        if (this.#live.size > 0) return;
        clearInterval(check);
        clearTimeout(timer);
        resolve();
      }, 10);
      timer.unref();
      check.unref();
    });
  }

  /** The next open stream taking calls (streamed calls of `method`, when given), round robin over the slots. */
  #pickStream(method?: string): ClientStream | undefined {
    for (let tried = 0; tried < this.#slots.length; tried += 1) {
      const stream = this.#slots[this.#nextSlot];
      this.#nextSlot = (this.#nextSlot + 1) % this.#slots.length;
      if (stream?.open && !stream.retired && (method === undefined || stream.methods.has(method))) return stream;
    }
    return undefined;
  }

  /**
   * The target's address set changed: as many streams per address as before, and every stream
   * replaced shortly, so that round robin spreads them over the new set. The first set known only
   * sizes the slots: the start spreads the streams once the channel has connected.
   */
  #addressesChanged(count: number): void {
    if (this.#closed || count === 0) return;
    const first = this.#addressCount === 0;
    this.#addressCount = count;
    this.#resize(Math.ceil(this.#options.streams / count) * count);
    if (first || !this.#allSlotsStarted) return;
    clearTimeout(this.#respreadTimer);
    this.#respreadTimer = setTimeout(() => {
      this.#respreadTimer = undefined;
      this.#slots.forEach((stream, slot) => {
        if (stream?.open && !stream.retired) this.#replace(slot, stream);
      });
    }, RESPREAD_DELAY_MS);
    this.#respreadTimer.unref();
  }

  /** Grows or shrinks the slots; the streams of slots removed are retired (their calls still finish). */
  #resize(count: number): void {
    const before = this.#slots.length;
    if (count === before) return;
    for (let slot = count; slot < before; slot += 1) {
      const stream = this.#slots[slot];
      if (stream) this.#retire(stream);
    }
    this.#slots.length = count;
    this.#slotBackoffs.length = count;
    for (let slot = before; slot < count; slot += 1) {
      this.#slots[slot] = undefined;
      this.#slotBackoffs[slot] = undefined;
      // Before the start has spread the streams, it opens every slot there is then.
      if (this.#allSlotsStarted) this.#openSlot(slot);
    }
    this.#nextSlot %= count;
  }

  #openSlot(slot: number): void {
    // A slot removed since its reopening was scheduled stays removed.
    if (this.#closed || slot >= this.#slots.length) return;
    let call: ClientStream['call'];
    try {
      call = this.#options.open() as unknown as ClientStream['call'];
    } catch {
      // The channel is closed: this happens only while the owner shuts down.
      this.#slots[slot] = undefined;
      return;
    }
    const stream: ClientStream = { call, pending: new Map(), open: false, methods: NO_METHODS, retired: false, halfClosed: false };
    this.#slots[slot] = stream;
    this.#live.add(stream);
    let statusSeen: grpc.StatusObject | undefined;
    let readEnded = false;
    call.on('metadata', (headers: grpc.Metadata) => {
      if (stream.retired) return;
      stream.open = true;
      const methods = headers.get(METHODS_HEADER)[0];
      if (typeof methods === 'string') stream.methods = new Set(methods.split(','));
      this.#slotBackoffs[slot] = undefined;
      const respread = this.#options.respreadAfterStartMs;
      let age = (this.#options.maxStreamAgeMs ?? DEFAULT_MAX_STREAM_AGE_MS) * (0.9 + Math.random() * 0.2);
      if (respread !== undefined && this.#allSlotsStarted && this.#firstGeneration > 0) {
        this.#firstGeneration -= 1;
        age = respread * (0.5 + Math.random() * 0.5);
      }
      stream.ageTimer = setTimeout(() => this.#replace(slot, stream), age);
      stream.ageTimer.unref();
      if (!this.#allSlotsStarted) {
        this.#allSlotsStarted = true;
        this.#firstGeneration = this.#slots.length;
        if (this.#slots.length > 1) {
          this.#replace(slot, stream);
          for (let other = 1; other < this.#slots.length; other += 1) this.#openSlot(other);
        } else if (respread !== undefined) {
          this.#firstGeneration = 0;
          clearTimeout(stream.ageTimer);
          stream.ageTimer = setTimeout(() => this.#replace(slot, stream), respread * (0.5 + Math.random() * 0.5));
          stream.ageTimer.unref();
        }
      }
    });
    call.on('data', (message: StreamedResponseOutput) => {
      if (message.result === 'drain') this.#replace(slot, stream);
      else this.#answer(stream, message.call_id ?? 0, message);
    });
    // The status can come before the last answers are read; the stream is over once both happened.
    const over = () => {
      if (statusSeen && readEnded) this.#ended(slot, stream, statusSeen);
    };
    call.on('status', (status: grpc.StatusObject) => {
      statusSeen = status;
      over();
    });
    call.on('end', () => {
      readEnded = true;
      over();
    });
    // Errors also arrive as the status; the listener keeps them from being thrown.
    call.on('error', () => undefined);
  }

  /**
   * Stops giving a stream new calls; its calls in flight are still answered. It is half-closed
   * once none is left, so that streamed calls can still be granted credit or cancelled meanwhile.
   */
  #retire(stream: ClientStream): void {
    if (stream.retired) return;
    stream.retired = true;
    clearTimeout(stream.ageTimer);
    if (stream.pending.size === 0) this.#halfClose(stream);
  }

  #halfClose(stream: ClientStream): void {
    if (stream.halfClosed) return;
    stream.halfClosed = true;
    stream.call.end();
  }

  /** Retires a stream (drained by the server, or too old) and opens its successor in the slot at once. */
  #replace(slot: number, stream: ClientStream): void {
    if (stream.retired) return;
    this.#retire(stream);
    if (this.#slots[slot] === stream) this.#openSlot(slot);
  }

  #ended(slot: number, stream: ClientStream, status: grpc.StatusObject): void {
    if (!this.#live.delete(stream)) return;
    const wasOpen = stream.open && !stream.retired;
    stream.retired = true;
    stream.halfClosed = true;
    clearTimeout(stream.ageTimer);
    const lost = streamLost(status);
    for (const callId of [...stream.pending.keys()]) this.#answer(stream, callId, undefined, lost);
    if (wasOpen && status.code !== grpc.status.OK) this.#options.onStreamBroken?.(GatewayError.fromServiceError(status));
    if (this.#slots[slot] !== stream || this.#closed) return;
    this.#slots[slot] = undefined;
    // Attempts count from the last stream that opened, so a server that ends every stream at once
    // is not asked again in a tight loop; meanwhile calls take the other streams or go unary.
    const backoff = this.#slotBackoffs[slot]?.next(undefined) ?? this.#reopenBackoff.next();
    this.#slotBackoffs[slot] = backoff;
    const timer = setTimeout(() => {
      this.#reopenTimers.delete(timer);
      this.#openSlot(slot);
    }, backoff.duration);
    timer.unref();
    this.#reopenTimers.add(timer);
  }

  /** Settles a pending call (or passes on a streamed call's event) with the server's message, or with a local failure. */
  #answer(stream: ClientStream, callId: number, message: StreamedResponseOutput | undefined, failure?: GatewayError): void {
    const pending = stream.pending.get(callId);
    if (!pending) return;
    const result = message?.result;
    // Only the called method's own response counts as an answer (or as an event of a streamed call).
    const value = result === pending.method ? message![result] : undefined;
    if (pending.events && value !== undefined && !message!.last) {
      pending.events.push(value);
      return;
    }
    stream.pending.delete(callId);
    clearTimeout(pending.timer);
    if (pending.onAbort) pending.signal?.removeEventListener('abort', pending.onAbort);
    let error = failure;
    if (failure) {
      // Given up on here (deadline, abort) while the stream lives: the server stops its work.
      if ((this.#options.cancellable || pending.events) && message === undefined && this.#live.has(stream) && !stream.halfClosed)
        stream.call.write({ call_id: callId, cancel: {} });
    } else if (result === 'error') {
      const info = message!.error ?? {};
      error = GatewayError.fromErrorInfo(info.code ?? grpc.status.UNKNOWN, info.info ?? {});
    } else if (value === undefined) error = GatewayError.fromServiceError({ code: grpc.status.UNKNOWN });
    if (stream.retired && stream.pending.size === 0 && this.#live.has(stream)) this.#halfClose(stream);
    if (pending.events) {
      if (!error) pending.events.push(value);
      pending.events.end(error);
    } else if (error) pending.reject!(error);
    else pending.resolve!(value);
  }
}

/**
 * The client side of streamed calls: calls carried as messages on a few long-lived streams,
 * correlated by call id, with unary calls while no stream is open. The wire protocol (frames,
 * credit, cancel, drain, errors) is written up in proto/gateway/rpc/v1/STREAMED_CALLS.md; how the
 * streams are spread over replicas and replaced is this file's own, described where it happens.
 */
import * as grpc from '@grpc/grpc-js';
import { ExponentialBackoff, noJitterGenerator, type GeneratorFn, type IBackoff } from 'cockatiel';
import { watchAddresses } from './address-resolver.js';
import type { CallOptions } from './client.js';
import { CallEvents } from './credit-window.js';
import { GatewayError } from './gateway-error.js';
import { localFailure, METHODS_HEADER, streamLost, type StreamedResponseOutput } from './streamed-call-frames.js';

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
   * A stream is replaced after about this long (±10%; default 30 s), so that streams spread again
   * over replicas that came back after the streams were opened, and leave a connection that the
   * server asked to go away (see DEFAULT_MAX_STREAM_AGE_MS).
   */
  maxStreamAgeMs?: number;
  /**
   * The streams opened at the start are replaced once between half this and this long after they
   * opened, whatever maxStreamAgeMs says: a replica that was still connecting when they opened (all
   * of them then went to the replicas already up) gets its share within seconds, not at their age.
   */
  respreadAfterStartMs?: number;
  /**
   * Whether the server takes `deadline_ms` and `cancel` (see STREAMED_CALLS.md, "Cancel"): each call then
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
/**
 * A stream outlives the connection it was opened on when that connection is asked to go away (the
 * server's age, MAX_CONNECTION_AGE_MS): it carries calls on until it is replaced here. Neither side
 * pings a closing connection (patches/README.md), so a peer lost silently meanwhile is noticed only
 * by the calls' deadlines; replacing every stream within about this long bounds that to about what
 * keepalive takes (15 s, then 5 s for the answer) on a connection that is not closing.
 */
const DEFAULT_MAX_STREAM_AGE_MS = 30_000;
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
 * Calls carried on a few long-lived streams, correlated by call id; while no stream is open, calls
 * go unary. A call rejects with a GatewayError, as `callUnary` does. Deadlines, cancels, credit,
 * drain and what a broken stream does to its calls follow STREAMED_CALLS.md.
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
    if (options.signal?.aborted) return Promise.reject(localFailure(grpc.status.CANCELLED));
    const callId = this.#takeCallId();
    return new Promise<Methods[Name][1]>((resolve, reject) => {
      this.#track(stream, callId, { method, resolve: resolve as (response: unknown) => void, reject }, options);
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
    const callId = this.#takeCallId();
    const events = new CallEvents<Streams[Name][1]>(
      options.window,
      (granted) => {
        if (!stream.halfClosed && this.#live.has(stream)) stream.call.write({ call_id: callId, credit: { events: granted } });
      },
      () => this.#answer(stream, callId, undefined, localFailure(grpc.status.CANCELLED)),
    );
    if (options.signal?.aborted) {
      events.end(localFailure(grpc.status.CANCELLED));
      return events;
    }
    this.#track(stream, callId, { method, events }, options);
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

  #takeCallId(): number {
    const callId = this.#nextCallId;
    this.#nextCallId += 1;
    return callId;
  }

  /** Makes a call sent on `stream` pending: answered by the server, or failed by its deadline or signal. */
  #track(stream: ClientStream, callId: number, call: Pick<PendingCall, 'method' | 'resolve' | 'reject' | 'events'>, options: CallOptions): void {
    const failWith = (code: grpc.status) => () => this.#answer(stream, callId, undefined, localFailure(code));
    const pending: PendingCall = { ...call, timer: setTimeout(failWith(grpc.status.DEADLINE_EXCEEDED), options.deadlineMs), signal: options.signal };
    if (options.signal) {
      pending.onAbort = failWith(grpc.status.CANCELLED);
      options.signal.addEventListener('abort', pending.onAbort, { once: true });
    }
    stream.pending.set(callId, pending);
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
    call.on('metadata', (headers: grpc.Metadata) => this.#opened(slot, stream, headers));
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

  /** The server took a stream (its headers came): it takes calls now, and ages from now. */
  #opened(slot: number, stream: ClientStream, headers: grpc.Metadata): void {
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
    this.#replaceAfter(slot, stream, age);
    if (!this.#allSlotsStarted) this.#startAllSlots(slot, stream);
  }

  /**
   * The first stream opened: the channel has connected to the replicas it resolved, so every slot
   * is opened now (that first stream replaced), and round robin gives each replica its share.
   */
  #startAllSlots(slot: number, stream: ClientStream): void {
    const respread = this.#options.respreadAfterStartMs;
    this.#allSlotsStarted = true;
    this.#firstGeneration = this.#slots.length;
    if (this.#slots.length > 1) {
      this.#replace(slot, stream);
      for (let other = 1; other < this.#slots.length; other += 1) this.#openSlot(other);
    } else if (respread !== undefined) {
      this.#firstGeneration = 0;
      clearTimeout(stream.ageTimer);
      this.#replaceAfter(slot, stream, respread * (0.5 + Math.random() * 0.5));
    }
  }

  /** Replaces the stream once it is `ageMs` old. */
  #replaceAfter(slot: number, stream: ClientStream, ageMs: number): void {
    stream.ageTimer = setTimeout(() => this.#replace(slot, stream), ageMs);
    stream.ageTimer.unref();
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

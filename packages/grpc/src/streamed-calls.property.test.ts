/**
 * The streamed-calls protocol (proto/gateway/rpc/v1/STREAMED_CALLS.md) checked with fast-check:
 * a real StreamedCalls and a real serveStreamedCalls talk over in-process streams whose every
 * message goes through the real CompleteCalls serializers, under random interleavings of whole and
 * streamed calls, consumers' reads, credit, cancels from the caller (abort, leaving the iteration),
 * failures and broken streams from the server, full write buffers, and the server's drain.
 *
 * Invariants: a streamed call never has more events sent than its window plus the credit granted;
 * every call ends exactly once, with a result, a cancel or an error; nothing is sent for a call
 * after its cancel reached the server, and no credit after the caller cancelled it; drain answers
 * every call the server accepted, no new call goes on a drained stream and no new stream is taken;
 * and once both sides are closed no timer, abort listener or buffer listener is left.
 */
import { EventEmitter, getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Metadata, StatusObject } from '@grpc/grpc-js';
import { loadGatewayGrpc, type ExecuteRequest, type ExecuteRequestOutput, type ExecuteResponseOutput, type ExecuteStreamEventOutput } from '@gateway/proto';
import { GatewayError } from './gateway-error.js';
import { GrpcStatus, Metadata as GrpcMetadata } from './index.js';
import { serveStreamedCalls, StreamedCalls, type StreamedCallContext, type StreamingCallContext } from './streamed-calls.js';

type Methods = { complete: [ExecuteRequest, ExecuteResponseOutput] };
type Streams = { stream: [ExecuteRequest, ExecuteStreamEventOutput] };

const wire = loadGatewayGrpc().gateway.executor.v1.ExecutorService.service.CompleteCalls;
/** Through the real serializers, so the frames are exactly what the peers exchange. */
const asRequest = (message: unknown) => wire.requestDeserialize(wire.requestSerialize(message as never)) as Record<string, unknown>;
const asResponse = (message: unknown) => wire.responseDeserialize(wire.responseSerialize(message as never)) as Record<string, unknown>;
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

// Timers ----------------------------------------------------------------------------------------

/** Every timer and interval set and not yet cleared or fired, while `track` is on. */
const liveTimers = new Set<unknown>();
const real = { setTimeout, clearTimeout, setInterval, clearInterval };
function trackTimers(): void {
  globalThis.setTimeout = ((callback: () => void, ms?: number) => {
    const handle: NodeJS.Timeout = real.setTimeout(() => {
      liveTimers.delete(handle);
      callback();
    }, ms);
    liveTimers.add(handle);
    return handle;
  }) as typeof setTimeout;
  globalThis.setInterval = ((callback: () => void, ms?: number) => {
    const handle = real.setInterval(callback, ms);
    liveTimers.add(handle);
    return handle;
  }) as typeof setInterval;
  const clear = (handle: unknown) => {
    liveTimers.delete(handle);
    real.clearTimeout(handle as NodeJS.Timeout);
  };
  globalThis.clearTimeout = clear as typeof clearTimeout;
  globalThis.clearInterval = clear as typeof clearInterval;
}
function untrackTimers(): void {
  Object.assign(globalThis, real);
  liveTimers.clear();
}
afterEach(untrackTimers);

// The model ------------------------------------------------------------------------------------

/** One call the test made, as its caller sees it. */
interface TestCall {
  readonly index: number;
  readonly streamed: boolean;
  readonly events: number;
  readonly controller: AbortController;
  /** How it ended on the caller: set once. */
  outcome?: 'result' | 'cancelled' | 'error' | 'unary';
  /** The server's handler fails at its next step. */
  fail: boolean;
  /** Lets a whole call's handler answer. */
  release?: () => void;
  iterator?: AsyncIterableIterator<ExecuteStreamEventOutput>;
  /** The consumer's reads, one after another. */
  reading: Promise<void>;
}

/** What the wire saw of one call id, and the violations found as it happened. */
interface WireLog {
  window: Map<number, number>;
  credit: Map<number, number>;
  eventsSent: Map<number, number>;
  ended: Set<number>;
  cancelReached: Set<number>;
  cancelWritten: Set<number>;
  accepted: Set<number>;
  /** Call ids of streams that broke: their calls end with the stream. */
  lostWith: Set<number>;
  violations: string[];
}

function newLog(): WireLog {
  return {
    window: new Map(),
    credit: new Map(),
    eventsSent: new Map(),
    ended: new Set(),
    cancelReached: new Set(),
    cancelWritten: new Set(),
    accepted: new Set(),
    lostWith: new Set(),
    violations: [],
  };
}

// In-process streams -------------------------------------------------------------------------

/** The server's end of one stream, as grpc-js's ServerDuplexStream behaves for serveStreamedCalls. */
class ServerEnd extends EventEmitter {
  cancelled = false;
  constructor(private readonly pair: StreamPair) {
    super();
  }
  sendMetadata(headers: Metadata): void {
    this.pair.toClient(() => this.pair.client.emit('metadata', headers));
  }
  write(message: unknown): boolean {
    const frame = asResponse(message);
    this.pair.observeServerWrite(frame);
    this.pair.toClient(() => this.pair.client.emit('data', frame));
    if (!this.pair.world.bufferFull) return true;
    setImmediate(() => this.emit('drain'));
    return false;
  }
  end(): void {
    this.pair.toClient(() => this.pair.endClient({ code: GrpcStatus.OK }));
    this.pair.over = true;
  }
}

/** The caller's end of one stream, as grpc-js's ClientDuplexStream behaves for StreamedCalls. */
class ClientEnd extends EventEmitter {
  constructor(private readonly pair: StreamPair) {
    super();
  }
  halfClosed = false;
  write(message: unknown): boolean {
    if (this.halfClosed) this.pair.world.log.violations.push('a write after the half-close');
    const frame = asRequest(message);
    this.pair.observeClientWrite(frame);
    this.pair.toServer(() => this.pair.deliverToServer(frame));
    return true;
  }
  end(): void {
    if (this.halfClosed) this.pair.world.log.violations.push('a second half-close');
    this.halfClosed = true;
    this.pair.toServer(() => this.pair.server.emit('end'));
  }
  cancel(): void {
    this.pair.break(GrpcStatus.CANCELLED);
  }
}

/** What every stream of one run shares. */
interface World {
  log: WireLog;
  bufferFull: boolean;
  serverDown: boolean;
  streamsTaken: number;
  pairs: StreamPair[];
}

/** One stream: both ends, delivering in order on microtasks until it is over. */
class StreamPair {
  readonly server = new ServerEnd(this);
  readonly client = new ClientEnd(this);
  over = false;
  /** The server took it (its handler runs). */
  taken = false;
  /** The server wrote `drain` on it. */
  drained = false;
  broken = false;
  readonly callIds = new Set<number>();

  constructor(readonly world: World) {}

  /** What the server wrote reaches the caller, its final status included. */
  toClient(deliver: () => void): void {
    queueMicrotask(deliver);
  }
  /** What the caller wrote reaches the server while the stream is not over. */
  toServer(deliver: () => void): void {
    queueMicrotask(() => {
      if (!this.over) deliver();
    });
  }
  endClient(status: Partial<StatusObject>): void {
    this.client.emit('status', { details: '', metadata: new GrpcMetadata(), ...status });
    this.client.emit('end');
  }
  /** The stream breaks (from either side): both ends learn it at once. */
  break(code: GrpcStatus): void {
    if (this.over) return;
    this.over = true;
    this.broken = true;
    for (const callId of this.callIds) this.world.log.lostWith.add(callId);
    queueMicrotask(() => {
      this.server.cancelled = true;
      this.server.emit('cancelled');
      this.server.emit('close');
      this.endClient({ code });
    });
  }
  deliverToServer(frame: Record<string, unknown>): void {
    const log = this.world.log;
    const callId = Number(frame.call_id);
    if (frame.call === 'cancel') log.cancelReached.add(callId);
    else if (frame.call === 'credit') log.credit.set(callId, (log.credit.get(callId) ?? 0) + Number((frame.credit as { events: number }).events));
    else {
      log.accepted.add(callId);
      log.window.set(callId, Number(frame.window ?? 0));
    }
    this.server.emit('data', frame);
  }
  observeServerWrite(frame: Record<string, unknown>): void {
    const log = this.world.log;
    if (frame.result === 'drain') {
      this.drained = true;
      return;
    }
    const callId = Number(frame.call_id);
    if (log.cancelReached.has(callId)) log.violations.push(`call ${callId}: ${String(frame.result)} sent after its cancel`);
    if (log.ended.has(callId)) log.violations.push(`call ${callId}: ${String(frame.result)} sent after its end`);
    if (frame.result === 'error' || frame.last || frame.result === 'complete') {
      log.ended.add(callId);
      return;
    }
    const sent = (log.eventsSent.get(callId) ?? 0) + 1;
    log.eventsSent.set(callId, sent);
    const window = log.window.get(callId) ?? 0;
    if (window > 0 && sent > window + (log.credit.get(callId) ?? 0)) log.violations.push(`call ${callId}: ${sent} events on ${window} + credit`);
  }
  observeClientWrite(frame: Record<string, unknown>): void {
    const log = this.world.log;
    const callId = Number(frame.call_id);
    if (frame.call === 'cancel') log.cancelWritten.add(callId);
    else if (frame.call === 'credit') {
      if (log.cancelWritten.has(callId)) log.violations.push(`call ${callId}: credit after its cancel`);
    } else {
      if (this.drained) log.violations.push(`call ${callId}: sent on a drained stream`);
      this.callIds.add(callId);
    }
  }
}

// One run ------------------------------------------------------------------------------------

type Action =
  | { kind: 'whole' }
  | { kind: 'streamed'; window: number; events: number }
  | { kind: 'take'; call: number; count: number }
  | { kind: 'answer'; call: number }
  | { kind: 'leave'; call: number }
  | { kind: 'abort'; call: number }
  | { kind: 'fail'; call: number }
  | { kind: 'bufferFull'; full: boolean }
  | { kind: 'break' }
  | { kind: 'drain'; patienceMs: number };

const actionArbitrary: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'whole' as const }), weight: 2 },
  {
    arbitrary: fc.record({ kind: fc.constant('streamed' as const), window: fc.integer({ min: 0, max: 4 }), events: fc.integer({ min: 0, max: 9 }) }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('take' as const), call: fc.nat(), count: fc.integer({ min: 1, max: 5 }) }), weight: 4 },
  fc.record({ kind: fc.constant('answer' as const), call: fc.nat() }),
  { arbitrary: fc.record({ kind: fc.constant('leave' as const), call: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('abort' as const), call: fc.nat() }), weight: 2 },
  fc.record({ kind: fc.constant('fail' as const), call: fc.nat() }),
  fc.record({ kind: fc.constant('bufferFull' as const), full: fc.boolean() }),
  { arbitrary: fc.constant({ kind: 'break' as const }), weight: 1 },
  fc.record({ kind: fc.constant('drain' as const), patienceMs: fc.constantFrom(0, 1, 50) }),
);

class Run {
  readonly world: World = { log: newLog(), bufferFull: false, serverDown: false, streamsTaken: 0, pairs: [] };
  readonly calls: TestCall[] = [];
  readonly serverSignals: AbortSignal[] = [];
  readonly service = serveStreamedCalls(
    { complete: (request: ExecuteRequestOutput, context: StreamedCallContext) => this.#whole(request, context) },
    'CompleteCalls',
    undefined,
    { stream: (request: ExecuteRequestOutput, context: StreamingCallContext<never>) => this.#streamed(request, context) },
  );
  readonly client = new StreamedCalls<Methods, Streams>({
    open: () => this.#open() as never,
    streams: 1,
    cancellable: true,
    reopenBackoff: { initialMs: 1, maxMs: 4 },
    unary: { complete: async () => ({ provider: 'unary', model_id: 'm' }) as ExecuteResponseOutput },
  });
  drainStarted?: Promise<void>;
  streamsAtDrain = 0;
  /** The streams the server had taken and not ended when its drain began. */
  openAtDrain: StreamPair[] = [];

  async act(action: Action): Promise<void> {
    const call = this.calls.length > 0 && 'call' in action ? this.calls[action.call % this.calls.length]! : undefined;
    switch (action.kind) {
      case 'whole':
        return this.#startWhole();
      case 'streamed':
        return this.#startStreamed(action.window, action.events);
      case 'take':
        return call?.streamed ? this.#take(call, action.count) : undefined;
      case 'answer':
        return call?.release?.();
      case 'leave':
        return call?.streamed ? this.#leave(call) : undefined;
      case 'abort':
        return call?.controller.abort();
      case 'fail':
        if (call) call.fail = true;
        return call?.release?.();
      case 'bufferFull':
        this.world.bufferFull = action.full;
        return;
      case 'break':
        return this.world.pairs.find((pair) => !pair.over)?.break(GrpcStatus.UNAVAILABLE);
      case 'drain':
        return this.#drain(action.patienceMs);
    }
  }

  /** Lets every call finish (whole calls answered, consumers reading to the end), drains, closes. */
  async finish(): Promise<void> {
    this.world.bufferFull = false;
    for (const call of this.calls) {
      call.release?.();
      if (call.streamed) this.#take(call, Number.POSITIVE_INFINITY);
    }
    this.#drain(20);
    for (let waited = 0; waited < 500 && this.calls.some((call) => call.outcome === undefined); waited += 1) await turn();
    await this.drainStarted;
    await this.client.close(50);
    for (let waited = 0; waited < 20; waited += 1) await turn();
  }

  #open(): ClientEnd {
    const pair = new StreamPair(this.world);
    if (this.world.serverDown) {
      // After GOAWAY a new stream is refused before it is taken.
      pair.break(GrpcStatus.UNAVAILABLE);
      return pair.client;
    }
    this.world.pairs.push(pair);
    queueMicrotask(() => {
      if (pair.over) return;
      this.world.streamsTaken += 1;
      pair.taken = true;
      this.service.handler(pair.server as never);
    });
    return pair.client;
  }

  #drain(patienceMs: number): void {
    if (this.drainStarted) return;
    this.world.serverDown = true;
    this.streamsAtDrain = this.world.streamsTaken;
    this.openAtDrain = this.world.pairs.filter((pair) => !pair.over && pair.taken);
    this.drainStarted = this.service.drain(patienceMs);
  }

  #newCall(streamed: boolean, events: number): TestCall {
    const call: TestCall = { index: this.calls.length, streamed, events, controller: new AbortController(), fail: false, reading: Promise.resolve() };
    this.calls.push(call);
    return call;
  }

  #ended(call: TestCall, outcome: NonNullable<TestCall['outcome']>): void {
    if (call.outcome !== undefined) this.world.log.violations.push(`call ${call.index} ended twice: ${call.outcome}, then ${outcome}`);
    call.outcome = outcome;
  }

  #outcomeOf(error: unknown): 'cancelled' | 'error' {
    return error instanceof GatewayError && error.code === GrpcStatus.CANCELLED ? 'cancelled' : 'error';
  }

  #startWhole(): void {
    const call = this.#newCall(false, 0);
    this.client.call('complete', { request_id: String(call.index), model_id: 'm' }, { deadlineMs: 60_000, signal: call.controller.signal }).then(
      (response) => this.#ended(call, response.provider === 'unary' ? 'unary' : 'result'),
      (error: unknown) => this.#ended(call, this.#outcomeOf(error)),
    );
  }

  #startStreamed(window: number, events: number): void {
    const call = this.#newCall(true, events);
    call.iterator = this.client.stream(
      'stream',
      { request_id: String(call.index), model_id: 'm' },
      { deadlineMs: 60_000, window, signal: call.controller.signal },
    );
    if (!call.iterator) this.#ended(call, 'unary');
  }

  #take(call: TestCall, count: number): void {
    const iterator = call.iterator;
    if (!iterator) return;
    call.reading = call.reading.then(async () => {
      for (let taken = 0; taken < count && call.outcome === undefined; taken += 1) {
        try {
          const next = await iterator.next();
          if (next.done || (next.value as ExecuteStreamEventOutput).end) this.#ended(call, 'result');
        } catch (error) {
          this.#ended(call, this.#outcomeOf(error));
        }
      }
    });
  }

  #leave(call: TestCall): void {
    call.reading = call.reading.then(async () => {
      if (call.outcome !== undefined || !call.iterator) return;
      await call.iterator.return?.();
      this.#ended(call, 'cancelled');
    });
  }

  /** Waits for its answer (or its end), honouring the signal as real handlers do. */
  async #whole(request: ExecuteRequestOutput, context: StreamedCallContext) {
    const call = this.calls[Number(request.request_id)]!;
    this.serverSignals.push(context.signal);
    await new Promise<void>((resolve) => {
      const done = () => {
        context.signal.removeEventListener('abort', done);
        resolve();
      };
      call.release = done;
      context.signal.addEventListener('abort', done);
    });
    if (call.fail) throw new GatewayError(GrpcStatus.UNAVAILABLE, 'service_unavailable', 'failed on purpose');
    return { provider: 'stream', model_id: 'm' };
  }

  /** Sends its events as fast as credit and the buffer allow, then the last one. */
  async #streamed(request: ExecuteRequestOutput, context: StreamingCallContext<never>) {
    const call = this.calls[Number(request.request_id)]!;
    this.serverSignals.push(context.signal);
    for (let index = 0; index < call.events && !context.signal.aborted; index += 1) {
      if (call.fail) throw new GatewayError(GrpcStatus.UNAVAILABLE, 'service_unavailable', 'failed on purpose');
      await context.send({ rendered: { chunks: [], text: String(index) } } as never);
    }
    if (call.fail) throw new GatewayError(GrpcStatus.UNAVAILABLE, 'service_unavailable', 'failed on purpose');
    return { end: { provider: 'stream' } };
  }
}

/** Every invariant of the protocol, once the run is over. */
function checkInvariants(run: Run): void {
  const { log } = run.world;
  expect(log.violations).toEqual([]);
  expect(run.calls.filter((call) => call.outcome === undefined).map((call) => call.index)).toEqual([]);
  for (const callId of log.accepted) {
    const over = log.ended.has(callId) || log.cancelReached.has(callId) || log.lostWith.has(callId);
    expect(over, `call ${callId} accepted and never answered`).toBe(true);
  }
  expect(run.world.streamsTaken).toBe(run.streamsAtDrain);
  for (const pair of run.openAtDrain) expect(pair.drained || pair.broken, 'a stream open at the drain got no drain notice').toBe(true);
  expect(run.service.openStreams).toBe(0);
  expect(run.client.openStreams).toBe(0);
  expect([...liveTimers]).toEqual([]);
  for (const call of run.calls) expect(getEventListeners(call.controller.signal, 'abort')).toEqual([]);
  for (const signal of run.serverSignals) expect(getEventListeners(signal, 'abort')).toEqual([]);
  for (const pair of run.world.pairs) expect(pair.server.listenerCount('drain')).toBe(0);
}

describe('streamed calls under random interleavings (fast-check)', () => {
  it('keep credit, end every call once, send nothing after a cancel, and drain cleanly', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(actionArbitrary, { minLength: 1, maxLength: 40 }), async (actions) => {
        trackTimers();
        try {
          const run = new Run();
          for (let waited = 0; waited < 5 && run.client.openStreams === 0; waited += 1) await turn();
          for (const action of actions) {
            await run.act(action);
            await turn();
          }
          await run.finish();
          checkInvariants(run);
        } finally {
          untrackTimers();
        }
      }),
      { numRuns: 150 },
    );
  });
});

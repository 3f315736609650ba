/**
 * StreamedCalls against real grpc-js servers on loopback, speaking gateway.auth.v1.Decide with
 * handlers of the test's own (the generic part knows nothing about keys or quotas).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Metadata, type ServerDuplexStream } from '@grpc/grpc-js';
import {
  loadGatewayGrpc,
  type AuthServiceClient,
  type CheckKeyRequest,
  type CheckKeyRequestOutput,
  type CheckKeyResponse,
  type CheckKeyResponseOutput,
  type SettleUsageRequest,
  type SettleUsageRequestOutput,
  type SettleUsageResponseOutput,
} from '@gateway/proto';
import { eventually } from '@gateway/testing';
import { callUnary, createClient, withoutCallerStack, type CallOptions } from './client.js';
import { GatewayError } from './gateway-error.js';
import { GrpcStatus } from './index.js';
import { createGatewayServer, unary, type GatewayServer } from './server.js';
import { serveStreamedCalls, StreamedCalls, type StreamedCallPath, type StreamedCallsOptions } from './streamed-calls.js';

type Methods = { check_key: [CheckKeyRequest, CheckKeyResponseOutput]; settle_usage: [SettleUsageRequest, SettleUsageResponseOutput] };
type CheckHandler = (request: CheckKeyRequestOutput) => Promise<CheckKeyResponse>;

const definition = loadGatewayGrpc().gateway.auth.v1.AuthService;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const never = () => new Promise<never>(() => undefined);

/** Answers with the reservation id it was given, after reserve_tokens ms. */
const echo: CheckHandler = async (request) => {
  await sleep(Number(request.reserve_tokens ?? 0));
  return { decision: 'DECISION_ALLOW', reservation_id: request.reservation_id ?? '' };
};

interface TestServer {
  port: number;
  server: GatewayServer;
  /** Streams the server accepted. */
  streamsServed: number;
  /** Streams open now. */
  openStreams: number;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * A server whose CheckKey (unary and streamed) runs `check`; without Decide when `streamed` is
 * false; with a Decide that takes each stream (sends its headers) and ends it at once with
 * UNAVAILABLE when `endStreams` is set.
 */
async function startServer(check: CheckHandler, options: { port?: number; streamed?: boolean; endStreams?: boolean } = {}): Promise<TestServer> {
  const settle = async (request: SettleUsageRequestOutput) => ({
    outcome: 'SETTLE_OUTCOME_SETTLED' as const,
    delta_tokens: Number(request.actual_tokens ?? 0),
  });
  const decide = serveStreamedCalls({ check_key: check, settle_usage: settle }, 'Decide');
  const handlers: Record<string, unknown> = { CheckKey: unary(check, 'CheckKey'), SettleUsage: unary(settle, 'SettleUsage') };
  const state = { streamsServed: 0 };
  if (options.endStreams) {
    handlers.Decide = (call: ServerDuplexStream<unknown, unknown>) => {
      state.streamsServed += 1;
      call.sendMetadata(new Metadata());
      call.emit('error', { code: GrpcStatus.UNAVAILABLE, details: 'ended at once' });
    };
  } else if (options.streamed !== false) {
    handlers.Decide = (call: Parameters<typeof decide.handler>[0]) => {
      state.streamsServed += 1;
      decide.handler(call);
    };
  }
  const server = createGatewayServer([
    { name: 'gateway.auth.v1.AuthService', definition: definition.service, handlers: handlers as never, drain: decide.drain },
  ]);
  const port = await server.listen(`127.0.0.1:${options.port ?? 0}`);
  cleanups.push(() => server.shutdown(100));
  return {
    port,
    server,
    get streamsServed() {
      return state.streamsServed;
    },
    get openStreams() {
      return decide.openStreams;
    },
  };
}

/** A client to `target` with StreamedCalls on it, recording each call's path. */
function connect(target: string, streams = 2, options: Partial<StreamedCallsOptions<Methods>> = {}) {
  const client: AuthServiceClient = createClient(definition, target);
  const paths: StreamedCallPath[] = [];
  const calls = new StreamedCalls<Methods>({
    open: () => client.Decide(),
    streams,
    unary: {
      check_key: (request, options) => callUnary(client, client.CheckKey, request, options),
      settle_usage: (request, options) => callUnary(client, client.SettleUsage, request, options),
    },
    reopenBackoff: { initialMs: 20, maxMs: 200 },
    onCall: (_method, path) => paths.push(path),
    ...options,
  });
  cleanups.push(async () => {
    await calls.close(200);
    client.close();
  });
  const check = (reservationId: string, delayMs = 0, options: Partial<CallOptions> = {}) =>
    calls.call('check_key', { api_key: 'k', request_id: 'r', reserve_tokens: delayMs, reservation_id: reservationId }, { deadlineMs: 5_000, ...options });
  return { client, calls, paths, check };
}

/**
 * One stream to 127.0.0.1:port with the given backoff, on a channel already connected (so that the
 * first pause is not the connection's); returns when each open began (performance.now), as they happen.
 */
async function recordOpens(port: number, reopenBackoff: { initialMs: number; maxMs: number }): Promise<number[]> {
  const client: AuthServiceClient = createClient(definition, `127.0.0.1:${port}`);
  cleanups.push(() => client.close());
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 5_000, (error) => (error ? reject(error) : resolve())));
  const opens: number[] = [];
  connect(`127.0.0.1:${port}`, 1, {
    reopenBackoff,
    open: () => {
      opens.push(performance.now());
      return client.Decide();
    },
  });
  return opens;
}

/** Polls every 10 ms until `condition` holds; fails naming `description` after timeoutMs. */
const until = (condition: () => boolean, description: string, timeoutMs?: number) => eventually(condition, description, timeoutMs, 10);

async function failureOf(promise: Promise<unknown>): Promise<GatewayError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }
  throw new Error('the call succeeded');
}

describe('StreamedCalls', () => {
  it('answers concurrent calls on the streams, each with its own response, as they finish', async () => {
    let inFlight = 0;
    let mostInFlight = 0;
    const server = await startServer(async (request) => {
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      try {
        return await echo(request);
      } finally {
        inFlight -= 1;
      }
    });
    const { calls, paths, check } = connect(`127.0.0.1:${server.port}`);
    await until(() => calls.openStreams === 2, 'two open streams');

    const finished: string[] = [];
    const ids = Array.from({ length: 20 }, (_, index) => `call-${index}`);
    // The first call sent takes longest (810 ms, the last 50 ms): answers come back out of order.
    const answers = await Promise.all(
      ids.map((id, index) =>
        check(id, 50 + (19 - index) * 40).then((answer) => {
          finished.push(id);
          return answer;
        }),
      ),
    );
    expect(answers.map((answer) => answer.reservation_id)).toEqual(ids);
    // Out of order, as they finish (not exact ranks: a loaded machine may swap neighbours).
    expect(finished.indexOf('call-19')).toBeLessThan(finished.indexOf('call-0'));
    expect(finished.indexOf('call-10')).toBeLessThan(finished.indexOf('call-0'));
    expect(finished[0]).not.toBe('call-0');
    expect(mostInFlight).toBe(20);
    expect(paths.every((path) => path === 'stream')).toBe(true);
    expect(server.openStreams).toBe(2);
  });

  it('fails a call with the same GatewayError as the unary call', async () => {
    const server = await startServer(async (request) => {
      if (request.api_key === 'bug') throw new Error('a bug with a secret in it');
      throw new GatewayError(GrpcStatus.UNAVAILABLE, 'auth_unavailable', 'The key service cannot decide right now.', {
        retryable: true,
        retryAfterMs: 1_000,
        param: 'api_key',
      });
    });
    const { client, calls } = connect(`127.0.0.1:${server.port}`);
    await until(() => calls.openStreams === 2, 'two open streams');
    const shape = (error: GatewayError) => ({
      code: error.code,
      reason: error.reason,
      message: error.message,
      retryable: error.retryable,
      retryAfterMs: error.retryAfterMs,
      param: error.param,
    });
    const both = async (apiKey: string) => {
      const streamed = await failureOf(calls.call('check_key', { api_key: apiKey }, { deadlineMs: 5_000 }));
      const viaUnary = await failureOf(callUnary(client, client.CheckKey, { api_key: apiKey }, { deadlineMs: 5_000 }));
      expect(shape(streamed)).toEqual(shape(viaUnary));
      return streamed;
    };
    expect(await both('store-down')).toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      reason: 'auth_unavailable',
      retryable: true,
      retryAfterMs: 1_000,
      param: 'api_key',
    });
    const bug = await both('bug');
    expect(bug).toMatchObject({ code: GrpcStatus.INTERNAL, reason: 'internal_error' });
    expect(bug.message).not.toContain('secret');
  });

  it('fails a call at its own deadline when the server stalls, and the stream keeps serving', async () => {
    const server = await startServer(async (request) => (request.api_key === 'stall' ? never() : echo(request)));
    const { calls, paths, check } = connect(`127.0.0.1:${server.port}`);
    await until(() => calls.openStreams === 2, 'two open streams');

    const started = Date.now();
    const stalled = await failureOf(calls.call('check_key', { api_key: 'stall' }, { deadlineMs: 200 }));
    expect(stalled).toMatchObject({ code: GrpcStatus.DEADLINE_EXCEEDED, reason: 'deadline_exceeded' });
    // Not before its deadline; the stalled server never answers, so only the deadline ends the call
    // (a hang guard far above the 200 ms, for a loaded machine).
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(10_000);

    expect((await check('after')).reservation_id).toBe('after');
    expect(paths).toEqual(['stream', 'stream']);
  });

  it('fails a call at once when its signal aborts', async () => {
    const server = await startServer(async () => never());
    const { calls, check } = connect(`127.0.0.1:${server.port}`);
    await until(() => calls.openStreams === 2, 'two open streams');
    const controller = new AbortController();
    const pending = check('cancelled', 0, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    expect(await failureOf(pending)).toMatchObject({ code: GrpcStatus.CANCELLED });
    expect(await failureOf(check('already', 0, { signal: AbortSignal.abort() }))).toMatchObject({ code: GrpcStatus.CANCELLED });
  });

  it('fails the calls in flight with UNAVAILABLE when the server dies, and serves on a reopened stream when it is back', async () => {
    const first = await startServer(async () => never());
    const { calls, paths, check } = connect(`127.0.0.1:${first.port}`);
    await until(() => calls.openStreams === 2, 'two open streams');

    // Deadlines far beyond the test's time: a call that waited for its deadline would end with
    // DEADLINE_EXCEEDED (or time the test out), so UNAVAILABLE proves it failed when the server died.
    const inFlight = [check('a', 0, { deadlineMs: 120_000 }), check('b', 0, { deadlineMs: 120_000 }), check('c', 0, { deadlineMs: 120_000 })];
    await sleep(50);
    first.server.server.forceShutdown();
    const failures = await Promise.all(inFlight.map((call) => failureOf(call)));
    for (const failure of failures) expect(failure).toMatchObject({ code: GrpcStatus.UNAVAILABLE, retryable: true });
    await until(() => calls.openStreams === 0, 'the streams to be gone');

    // While nothing listens, a call goes unary and fails as a unary call does.
    paths.length = 0;
    expect(await failureOf(check('down'))).toMatchObject({ code: GrpcStatus.UNAVAILABLE });
    expect(paths).toEqual(['unary']);

    const second = await startServer(echo, { port: first.port });
    await until(() => calls.openStreams === 2, 'the streams to reopen', 10_000);
    paths.length = 0;
    expect((await check('back')).reservation_id).toBe('back');
    expect(paths).toEqual(['stream']);
    expect(second.streamsServed).toBe(2);
  });

  it('reopens a stream that fails to open after pauses doubling from initialMs up to maxMs', async () => {
    // Without Decide every stream fails before it opens (UNIMPLEMENTED, no headers).
    const server = await startServer(echo, { streamed: false });
    const opens = await recordOpens(server.port, { initialMs: 50, maxMs: 100 });
    await until(() => opens.length >= 6, 'six attempts to open a stream');
    const pauses = [0, 1, 2, 3, 4].map((index) => opens[index + 1]! - opens[index]!);
    // A timer never fires early: each pause is at least its delay less the 20% spread. Lateness on a
    // busy machine only lengthens pauses, so the upper bound is loose and checked only where the cap
    // shows: without it the fifth pause would be 800 ms ±20%, at least 640.
    for (const [index, delay] of [50, 100, 100, 100, 100].entries()) expect(pauses[index]).toBeGreaterThanOrEqual(delay * 0.8 - 2);
    expect(pauses[4]).toBeLessThan(100 * 1.2 + 250);
  });

  it('waits initialMs again after a stream that opened, even when every stream ends at once', async () => {
    const server = await startServer(echo, { endStreams: true });
    const opens = await recordOpens(server.port, { initialMs: 20, maxMs: 1_000 });
    await until(() => opens.length >= 6 && server.streamsServed >= 6, 'six streams opened');
    const pauses = opens.slice(1, 6).map((at, index) => at - opens[index]!);
    // Counted from the first open instead, the fifth pause would be 320 ms ±20%, at least 256; the
    // bound leaves a busy machine's timers 170 ms of lateness.
    for (const pause of pauses) {
      expect(pause).toBeGreaterThanOrEqual(20 * 0.8 - 2);
      expect(pause).toBeLessThan(200);
    }
  });

  it('goes unary while no stream is open: a server without the streaming method, or no streams wanted', async () => {
    const old = await startServer(echo, { streamed: false });
    const withStreams = connect(`127.0.0.1:${old.port}`);
    await sleep(300);
    expect(withStreams.calls.openStreams).toBe(0);
    expect((await withStreams.check('old-server')).reservation_id).toBe('old-server');
    expect(withStreams.paths).toEqual(['unary']);

    const server = await startServer(echo);
    const withoutStreams = connect(`127.0.0.1:${server.port}`, 0);
    expect((await withoutStreams.check('no-streams')).reservation_id).toBe('no-streams');
    const settled = await withoutStreams.calls.call('settle_usage', { reservation_id: 'x', actual_tokens: 7 }, { deadlineMs: 5_000 });
    expect(settled).toMatchObject({ outcome: 'SETTLE_OUTCOME_SETTLED', delta_tokens: 7 });
    expect(withoutStreams.paths).toEqual(['unary', 'unary']);
    expect(server.streamsServed).toBe(0);
  });

  it('on a graceful shutdown, answers every call sent, ends its streams well within the grace, and the caller moves to the other replica', async () => {
    const leaving = await startServer(echo);
    const staying = await startServer(echo);
    const { calls, check } = connect(`ipv4:127.0.0.1:${leaving.port},127.0.0.1:${staying.port}`, 4);
    // Round robin spreads the streams over both replicas.
    await until(() => calls.openStreams === 4 && leaving.openStreams + staying.openStreams === 4, 'four open streams', 10_000);
    expect([leaving.openStreams, staying.openStreams]).toEqual([2, 2]);

    // Slow calls in flight on every stream, and a steady flow of calls during the shutdown.
    const slow = Array.from({ length: 8 }, (_, index) => check(`slow-${index}`, 300));
    await sleep(20);
    const started = Date.now();
    const shutdown = leaving.server.shutdown(10_000).then(() => Date.now() - started);
    const during: Array<Promise<unknown>> = [];
    for (let index = 0; index < 50; index += 1) {
      during.push(check(`during-${index}`));
      await sleep(10);
    }
    const answers = await Promise.allSettled([...slow, ...during]);
    expect(answers.filter((answer) => answer.status === 'rejected')).toEqual([]);
    // The slow calls take 300 ms; a caller that did not half-close at the drain notice would hold
    // its stream until the server's patience (1 s) ran out.
    expect(await shutdown).toBeLessThan(800);

    await until(() => calls.openStreams === 4, 'four streams on the staying replica');
    const servedBefore = staying.streamsServed;
    expect((await check('after')).reservation_id).toBe('after');
    expect(staying.streamsServed).toBe(servedBefore);
  });

  it('spreads its first streams again soon after the start, so a replica still connecting then gets its share', async () => {
    const early = await startServer(echo);
    const latePort = await startServer(echo).then(async (probe) => {
      await probe.server.shutdown(0);
      return probe.port;
    });
    const { calls } = connect(`ipv4:127.0.0.1:${early.port},127.0.0.1:${latePort}`, 4, { respreadAfterStartMs: 3_000 });
    await until(() => calls.openStreams === 4, 'four open streams');
    expect(early.openStreams).toBe(4);
    const late = await startServer(echo, { port: latePort });
    // The channel reconnects to the late replica within about a second; the first streams are
    // replaced between 1.5 and 3 s after they opened, round robin over both.
    await until(() => late.openStreams > 0 && calls.openStreams === 4, 'a stream on the late replica', 8_000);
    expect(early.openStreams + late.openStreams).toBe(4);
  }, 15_000);

  it('on close, answers the calls already sent', async () => {
    const server = await startServer(echo);
    const { calls, check } = connect(`127.0.0.1:${server.port}`);
    await until(() => calls.openStreams === 2, 'two open streams');
    const pending = check('in-flight', 200);
    await sleep(20);
    await calls.close(2_000);
    expect((await pending).reservation_id).toBe('in-flight');
    expect(calls.openStreams).toBe(0);
  });
});

describe('withoutCallerStack', () => {
  it('starts the call with no stack trace captured, and restores the limit even when starting throws', () => {
    const before = Error.stackTraceLimit;
    expect(withoutCallerStack(() => new Error('inside').stack)).toBe('Error: inside');
    expect(() =>
      withoutCallerStack(() => {
        throw new Error('refused');
      }),
    ).toThrow('refused');
    expect(Error.stackTraceLimit).toBe(before);
    expect(new Error('outside').stack).toContain('\n    at ');
  });
});

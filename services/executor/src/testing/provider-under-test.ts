/**
 * An HTTP provider adapter under test against the fake upstream, and the cancellation checks every
 * HTTP adapter passes alike.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import { type GatewayError, GrpcStatus } from '@gateway/grpc';
import { replayJson, startFakeUpstream, type FakeUpstream, type Responder, PROVIDER_TEST_KEY, PROVIDER_TEST_KEY_ENV, providerFixture } from '@gateway/testing';
import type { ChatRequestOutput, ChatResponse } from '@gateway/proto';
import type { Provider, ProviderContext, ProviderStreamEvent } from '../providers/provider.js';
import type { HttpProviderDependencies } from '../providers/upstream-http.js';
import { UpstreamPools } from '../providers/upstream-pools.js';
import { collect, drain, gatewayErrorOf, simpleRequest } from './provider-calls.js';

/** How a test file builds its adapter. */
export interface ProviderSetup<P extends Provider> {
  /** The environment the adapter reads its key from; PROVIDER_TEST_KEY in PROVIDER_TEST_KEY_ENV unless given. */
  readonly environment?: Readonly<Record<string, string>>;
  create(dependencies: HttpProviderDependencies): P;
  /** The catalog model served by the fake upstream at `baseUrl`. */
  modelOf(baseUrl: string): CatalogModel;
}

/** The adapter, its fake upstream and its model; set before the file's first test. */
export interface ProviderUnderTest<P extends Provider> {
  readonly upstream: FakeUpstream;
  readonly provider: P;
  readonly model: CatalogModel;
  /** The context of a call: the model (or another), a signal, the test request id. */
  contextOf(signal?: AbortSignal, catalogModel?: CatalogModel): ProviderContext;
}

/**
 * Starts the fake upstream and the adapter before the file's tests (the pools with short
 * first-byte and idle timeouts), forgets each test's requests after it, closes both at the end.
 */
export function useProviderUnderTest<P extends Provider>(setup: ProviderSetup<P>): ProviderUnderTest<P> {
  let pools: UpstreamPools;
  const under = {
    contextOf(signal: AbortSignal = new AbortController().signal, catalogModel: CatalogModel = under.model): ProviderContext {
      return { model: catalogModel, signal, requestId: 'test-request' };
    },
  } as { upstream: FakeUpstream; provider: P; model: CatalogModel } & Pick<ProviderUnderTest<P>, 'contextOf'>;
  beforeAll(async () => {
    // Until a test says otherwise, the upstream answers an OpenAI chat completion.
    under.upstream = await startFakeUpstream(replayJson(200, providerFixture('openai-compatible', 'chat-completion.json')));
    pools = new UpstreamPools({ connectMs: 1000, firstByteMs: 400, idleMs: 400 });
    under.provider = setup.create({ pools, environment: setup.environment ?? { [PROVIDER_TEST_KEY_ENV]: PROVIDER_TEST_KEY } });
    under.model = setup.modelOf(under.upstream.baseUrl);
  });
  afterEach(() => {
    under.upstream.requests.length = 0;
  });
  afterAll(async () => {
    await pools.close(100);
    await under.upstream.close();
  });
  return under;
}

/**
 * How soon an upstream connection must close once its caller gives up: well before the slow
 * responders here would end on their own (a chunk every 5 s, or never), so a closure this soon is
 * the abort's, and loose enough that a loaded machine's event-loop delays cannot fail it.
 */
const PROMPTLY_MS = 2_000;

/** A stream aborted after its first chunk rejects with AbortError and closes the upstream connection at once. */
export async function expectStreamAbortClosesUpstream(under: ProviderUnderTest<Provider>, slowStream: Responder): Promise<void> {
  const { upstream, provider } = under;
  upstream.respond(slowStream);
  const controller = new AbortController();
  const iterator = provider.stream(simpleRequest(), under.contextOf(controller.signal))[Symbol.asyncIterator]();
  const first = await iterator.next();
  expect(first.value).toMatchObject({ type: 'chunk' });
  const abortedAt = performance.now();
  const pending = iterator.next();
  controller.abort();
  await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  const closedAt = await upstream.requests[0]?.closed;
  expect((closedAt as number) - abortedAt).toBeLessThan(PROMPTLY_MS);
  expect(upstream.requests[0]?.finished).toBe(false);
}

/** A whole request aborted before the answer rejects with AbortError and closes the upstream connection. */
export async function expectWholeAbortClosesUpstream(under: ProviderUnderTest<Provider>): Promise<void> {
  const { upstream, provider } = under;
  upstream.respond(() => {
    /* never answers */
  });
  const controller = new AbortController();
  const pending = provider.complete(simpleRequest(), under.contextOf(controller.signal));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const abortedAt = performance.now();
  controller.abort();
  await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  expect(((await upstream.requests[0]?.closed) as number) - abortedAt).toBeLessThan(PROMPTLY_MS);
}

/** A caller that stops reading after the first chunk releases the upstream connection at once. */
export async function expectEarlyLeaveReleasesUpstream(under: ProviderUnderTest<Provider>, slowStream: Responder): Promise<void> {
  const { upstream, provider } = under;
  upstream.respond(slowStream);
  for await (const event of provider.stream(simpleRequest(), under.contextOf())) {
    expect(event.type).toBe('chunk');
    break;
  }
  const leftAt = performance.now();
  expect(((await upstream.requests[0]?.closed) as number) - leftAt).toBeLessThan(PROMPTLY_MS);
}

/** Answers the next request with `reply`, then makes a whole call of `request`. */
export function completeWith(under: ProviderUnderTest<Provider>, reply: Responder, request: ChatRequestOutput = simpleRequest()): Promise<ChatResponse> {
  under.upstream.respond(reply);
  return under.provider.complete(request, under.contextOf());
}

/** Answers the next request with `reply`, then reads a stream of `request` to its end. */
export function streamWith(under: ProviderUnderTest<Provider>, reply: Responder, request: ChatRequestOutput = simpleRequest()): Promise<ProviderStreamEvent[]> {
  under.upstream.respond(reply);
  return collect(under.provider.stream(request, under.contextOf()));
}

/** Answers the next request with `reply`, then reads a stream until it ends or fails: the events it got and the failure. */
export function drainWith(under: ProviderUnderTest<Provider>, reply: Responder): Promise<{ events: ProviderStreamEvent[]; failure: unknown }> {
  under.upstream.respond(reply);
  return drain(under.provider.stream(simpleRequest(), under.contextOf()));
}

/**
 * Answers the next request with `reply`, runs a call (whole, or a stream read to its end), and
 * returns the GatewayError the gRPC boundary would send for its UpstreamError.
 */
export function failureOf(under: ProviderUnderTest<Provider>, reply: Responder, call: 'complete' | 'stream' = 'complete'): Promise<GatewayError> {
  return gatewayErrorOf(call === 'complete' ? completeWith(under, reply) : streamWith(under, reply));
}

/** A call that failed as a server failure: retryable UNAVAILABLE `upstream_error`, with the upstream's status when it sent one. */
export async function expectRetryableUnavailable(failure: Promise<GatewayError>, upstreamStatus?: number): Promise<void> {
  expect(await failure).toMatchObject({
    code: GrpcStatus.UNAVAILABLE,
    reason: 'upstream_error',
    retryable: true,
    ...(upstreamStatus === undefined ? {} : { upstreamStatus }),
  });
}

/** An upstream that never answers fails a whole call with DEADLINE_EXCEEDED `upstream_timeout` after the first-byte timeout. */
export async function expectFirstByteTimeout(under: ProviderUnderTest<Provider>): Promise<void> {
  const failure = await failureOf(under, () => {
    /* never answers */
  });
  expect(failure).toMatchObject({ code: GrpcStatus.DEADLINE_EXCEEDED, reason: 'upstream_timeout' });
}

/** A 400 the caller caused: INVALID_ARGUMENT `upstream_invalid_request`, not retryable, showing the upstream's message. */
export async function expectInvalidRequest(under: ProviderUnderTest<Provider>, reply: Responder, upstreamMessage: string): Promise<void> {
  const error = await failureOf(under, reply);
  expect(error).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'upstream_invalid_request', retryable: false, upstreamStatus: 400 });
  expect(error.message).toContain(upstreamMessage);
}

/** An upstream message that echoes our key reaches the caller with the key redacted; returns the failure. */
export async function expectKeyRedacted(under: ProviderUnderTest<Provider>, reply: Responder, key: string): Promise<GatewayError> {
  const echoed = await failureOf(under, reply);
  expect(echoed.message).not.toContain(key);
  expect(echoed.message).toContain('[redacted]');
  return echoed;
}

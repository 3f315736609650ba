/**
 * An HTTP provider adapter under test against the fake upstream, and the cancellation checks every
 * HTTP adapter passes alike.
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { replayJson, startFakeUpstream, type FakeUpstream, type Responder, PROVIDER_TEST_KEY, PROVIDER_TEST_KEY_ENV, providerFixture } from '@gateway/testing';
import type { ChatRequestOutput, ChatResponse } from '@gateway/proto';
import type { EmbeddingBatch, EmbeddingBatchResult, Provider, ProviderContext, ProviderStreamEvent } from '../providers/provider.js';
import type { HttpProviderDependencies } from '../providers/upstream-http.js';
import { UpstreamError } from '../providers/upstream-error.js';
import { UpstreamPools } from '../providers/upstream-pools.js';
import { chunksOf, collect, drain, gatewayErrorOf, simpleRequest } from './provider-calls.js';

/** How a test file builds its adapter. */
export interface ProviderSetup<P extends Provider> {
  /** The environment the adapter reads its key from; PROVIDER_TEST_KEY in PROVIDER_TEST_KEY_ENV unless given. */
  readonly environment?: Readonly<Record<string, string>>;
  create(dependencies: HttpProviderDependencies): P;
  /** The catalog model served by the fake upstream at `baseUrl`. */
  modelOf(baseUrl: string): CatalogModel;
}

/**
 * How soon an upstream connection must close once its caller gives up: well before the slow
 * responders here would end on their own (a chunk every 5 s, or never), so a closure this soon is
 * the abort's, and loose enough that a loaded machine's event-loop delays cannot fail it.
 */
const PROMPTLY_MS = 2_000;

/**
 * The adapter, its fake upstream and its model (set before the file's first test), with the calls
 * and the checks every HTTP adapter's tests make through them.
 */
export class ProviderUnderTest<P extends Provider> {
  upstream!: FakeUpstream;
  provider!: P;
  model!: CatalogModel;

  /** The context of a call: the model (or another), a signal, the test request id. */
  readonly contextOf = (signal: AbortSignal = new AbortController().signal, catalogModel: CatalogModel = this.model): ProviderContext => ({
    model: catalogModel,
    signal,
    requestId: 'test-request',
  });

  /** Answers the next request with `reply`, then makes a whole call of `request`. */
  completeWith(reply: Responder, request: ChatRequestOutput = simpleRequest()): Promise<ChatResponse> {
    this.upstream.respond(reply);
    return this.provider.complete(request, this.contextOf());
  }

  /** Answers the next request with `reply`, then reads a stream of `request` to its end. */
  streamWith(reply: Responder, request: ChatRequestOutput = simpleRequest()): Promise<ProviderStreamEvent[]> {
    this.upstream.respond(reply);
    return collect(this.provider.stream(request, this.contextOf()));
  }

  /** Embeds `batch` with the adapter's embeddings, for the file's model. */
  embed(batch: EmbeddingBatch): Promise<EmbeddingBatchResult> {
    const { embeddings } = this.provider;
    if (!embeddings) throw new Error(`${this.provider.name} has no embeddings`);
    return embeddings.embed(batch, this.contextOf());
  }

  /** Answers the next request with `reply`, then reads a stream until it ends or fails: the events it got and the failure. */
  drainWith(reply: Responder): Promise<{ events: ProviderStreamEvent[]; failure: unknown }> {
    this.upstream.respond(reply);
    return drain(this.provider.stream(simpleRequest(), this.contextOf()));
  }

  /**
   * Answers the next request with `reply`, runs a call (whole, or a stream read to its end), and
   * returns the GatewayError the gRPC boundary would send for its UpstreamError.
   */
  failureOf(reply: Responder, call: 'complete' | 'stream' = 'complete'): Promise<GatewayError> {
    return gatewayErrorOf(call === 'complete' ? this.completeWith(reply) : this.streamWith(reply));
  }

  /** A stream aborted after its first chunk rejects with AbortError and closes the upstream connection at once. */
  async expectStreamAbortClosesUpstream(slowStream: Responder): Promise<void> {
    this.upstream.respond(slowStream);
    const controller = new AbortController();
    const iterator = this.provider.stream(simpleRequest(), this.contextOf(controller.signal))[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.value).toMatchObject({ type: 'chunk' });
    const abortedAt = performance.now();
    const pending = iterator.next();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    const closedAt = await this.upstream.requests[0]?.closed;
    expect((closedAt as number) - abortedAt).toBeLessThan(PROMPTLY_MS);
    expect(this.upstream.requests[0]?.finished).toBe(false);
  }

  /** A whole request aborted before the answer rejects with AbortError and closes the upstream connection. */
  async expectWholeAbortClosesUpstream(): Promise<void> {
    this.upstream.respond(() => {
      /* never answers */
    });
    const controller = new AbortController();
    const pending = this.provider.complete(simpleRequest(), this.contextOf(controller.signal));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const abortedAt = performance.now();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(((await this.upstream.requests[0]?.closed) as number) - abortedAt).toBeLessThan(PROMPTLY_MS);
  }

  /** A caller that stops reading after the first chunk releases the upstream connection at once. */
  async expectEarlyLeaveReleasesUpstream(slowStream: Responder): Promise<void> {
    this.upstream.respond(slowStream);
    for await (const event of this.provider.stream(simpleRequest(), this.contextOf())) {
      expect(event.type).toBe('chunk');
      break;
    }
    const leftAt = performance.now();
    expect(((await this.upstream.requests[0]?.closed) as number) - leftAt).toBeLessThan(PROMPTLY_MS);
  }

  /** An upstream that never answers fails a whole call with DEADLINE_EXCEEDED `upstream_timeout` after the first-byte timeout. */
  async expectFirstByteTimeout(): Promise<void> {
    const failure = await this.failureOf(() => {
      /* never answers */
    });
    expect(failure).toMatchObject({ code: GrpcStatus.DEADLINE_EXCEEDED, reason: 'upstream_timeout' });
  }

  /** A 400 the caller caused: INVALID_ARGUMENT `upstream_invalid_request`, not retryable, showing the upstream's message. */
  async expectInvalidRequest(reply: Responder, upstreamMessage: string): Promise<void> {
    const error = await this.failureOf(reply);
    expect(error).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'upstream_invalid_request', retryable: false, upstreamStatus: 400 });
    expect(error.message).toContain(upstreamMessage);
  }

  /**
   * A request the adapter refuses before any call: its own INVALID_ARGUMENT (no UpstreamError)
   * naming `param`, for `reason` when given, and no request upstream.
   */
  async expectRefusedBeforeCall(request: ChatRequestOutput, param: string, reason?: string): Promise<void> {
    const error = await this.provider.complete(request, this.contextOf()).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).not.toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, param, ...(reason === undefined ? {} : { reason }) });
    expect(this.upstream.requests).toHaveLength(0);
  }

  /** Server failures (each status with its body) and a 2xx `malformed` body: each a retryable UNAVAILABLE, with the failure's status. */
  async expectServerFailuresRetryable(failures: ReadonlyArray<readonly [number, string]>, malformed: string): Promise<void> {
    for (const [status, body] of failures) await expectRetryableUnavailable(this.failureOf(replayJson(status, body)), status);
    await expectRetryableUnavailable(this.failureOf(replayJson(200, malformed)));
  }

  /** A rate limit (`reply`), whole or streamed: retryable RESOURCE_EXHAUSTED `upstream_rate_limited`, asking for a wait of `retryAfterMs`; returns the failure. */
  async expectRateLimited(reply: Responder, retryAfterMs: number, call: 'complete' | 'stream' = 'complete'): Promise<GatewayError> {
    const limited = await this.failureOf(reply, call);
    expect(limited).toMatchObject({ code: GrpcStatus.RESOURCE_EXHAUSTED, reason: 'upstream_rate_limited', retryable: true, retryAfterMs });
    return limited;
  }

  /** An upstream message that echoes our key reaches the caller with the key redacted; returns the failure. */
  async expectKeyRedacted(reply: Responder, key: string): Promise<GatewayError> {
    const echoed = await this.failureOf(reply);
    expect(echoed.message).not.toContain(key);
    expect(echoed.message).toContain('[redacted]');
    return echoed;
  }

  /**
   * Asks for logprobs from a provider that has none (Anthropic, Gemini): the answer comes, whole
   * (`replies.whole`) and streamed (`replies.stream`), with no logprobs on any choice, and nothing
   * about logprobs reaches the upstream.
   */
  async expectAnswersWithoutLogprobs(replies: { whole: Responder; stream: Responder }): Promise<void> {
    const request = simpleRequest({ logprobs: true, top_logprobs: 2 });
    const response = await this.completeWith(replies.whole, request);
    expect(JSON.stringify(this.upstream.requests.at(-1)?.body)).not.toMatch(/logprobs/i);
    expect(response.choices?.[0]?.message?.content).toBeTruthy();
    expect(response.choices?.every((choice) => choice.logprobs === undefined)).toBe(true);
    const chunks = chunksOf(await this.streamWith(replies.stream, request));
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((chunk) => chunk.choices?.every((choice) => choice.logprobs === undefined))).toBe(true);
  }
}

/**
 * Starts the fake upstream and the adapter before the file's tests (the pools with short
 * first-byte and idle timeouts), forgets each test's requests after it, closes both at the end.
 */
export function useProviderUnderTest<P extends Provider>(setup: ProviderSetup<P>): ProviderUnderTest<P> {
  let pools: UpstreamPools;
  const under = new ProviderUnderTest<P>();
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

/** A call that failed as a server failure: retryable UNAVAILABLE `upstream_error`, with the upstream's status when it sent one. */
export async function expectRetryableUnavailable(failure: Promise<GatewayError>, upstreamStatus?: number): Promise<void> {
  expect(await failure).toMatchObject({
    code: GrpcStatus.UNAVAILABLE,
    reason: 'upstream_error',
    retryable: true,
    ...(upstreamStatus === undefined ? {} : { upstreamStatus }),
  });
}

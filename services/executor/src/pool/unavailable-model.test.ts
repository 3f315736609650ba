/**
 * A model whose upstream cannot be reached or cannot serve is unavailable from the very first
 * request: UNAVAILABLE `model_unavailable` with a retry-after (HTTP 503), whole and streamed, and
 * its fallbacks answer; only an upstream that answered something unusable is `upstream_error`
 * (HTTP 502). Through the real gRPC server, against real sockets: a refused port, an upstream that
 * resets connections, a host name that does not resolve, one that never answers, and the fake
 * upstream answering 5xx, 429 or 529 on every try.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import { GrpcStatus } from '@gateway/grpc';
import type { ExecuteRequest } from '@gateway/proto';
import {
  refusedBaseUrl,
  replayJson,
  startBrokenUpstream,
  startFakeUpstream,
  type BrokenUpstream,
  type FakeUpstream,
  type Responder,
  openAiCompatibleModel,
  simulatedModel,
  fixture,
} from '@gateway/testing';
import { completeOn, failureOf, streamCompleteOn } from '../testing/executor-calls.js';
import { upstreamAt, useExecutor } from '../testing/executor-under-test.js';
import { UNAVAILABLE_RETRY_AFTER_MS } from './run-with-fallbacks.js';

const MAX_ATTEMPTS = 3;
/** One more failure than a request's tries: a first request never opens a breaker, a second does. */
const CONSECUTIVE_FAILURES = MAX_ATTEMPTS + 1;
const OPEN_MS = 6_000;
const FIRST_BYTE_MS = 300;

/** A stream that sends its first two events, then resets the connection. */
const dropsAfterFirstByte: Responder = (_request, response: ServerResponse) => {
  const [first, second] = fixture('stream-text.sse').split(/\n\n/);
  response.writeHead(200, { 'content-type': 'text/event-stream' });
  response.write(`${first}\n\n${second}\n\n`, () => setTimeout(() => response.socket?.resetAndDestroy(), 50));
};

/** How the fake upstream answers each upstream model name; each catalog model names its own. */
const ANSWERS: Record<string, Responder> = {
  'answers-500': replayJson(500, fixture('error-500.json')),
  'answers-503': replayJson(503, fixture('error-500.json')),
  'answers-503-retry-after': replayJson(503, fixture('error-500.json'), { 'retry-after': '3' }),
  'answers-529': replayJson(529, JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })),
  'answers-429': replayJson(429, fixture('error-429.json')),
  'answers-429-retry-after': replayJson(429, fixture('error-429.json'), { 'retry-after': '3' }),
  'answers-malformed': replayJson(200, fixture('malformed.txt')),
  'answers-401': replayJson(401, fixture('error-401.json')),
  'answers-400': replayJson(400, fixture('error-400.json')),
  'drops-after-first-byte': dropsAfterFirstByte,
};

let upstream: FakeUpstream;
let resetting: BrokenUpstream;
let silent: BrokenUpstream;
let refused: string;

/** An openai-compatible model at `baseUrl` whose upstream model name is `upstreamModel`. */
function modelAt(id: string, baseUrl: string, upstreamModel = 'gpt-4o-mini'): CatalogModel {
  return openAiCompatibleModel(baseUrl, { id, upstream: upstreamAt(baseUrl, upstreamModel) });
}

/** A model the fake upstream answers as ANSWERS says for `upstreamModel`. */
function answering(id: string, upstreamModel: keyof typeof ANSWERS): CatalogModel {
  return modelAt(id, upstream.baseUrl, upstreamModel);
}

/** How many requests for `upstreamModel` reached the fake upstream. */
function requestsFor(upstreamModel: string): number {
  return upstream.requests.filter((request) => request.body.model === upstreamModel).length;
}

const executor = useExecutor(async () => {
  [upstream, resetting, silent, refused] = await Promise.all([
    startFakeUpstream((request, response) => (ANSWERS[String(request.body.model)] ?? replayJson(200, fixture('chat-completion.json')))(request, response)),
    startBrokenUpstream('reset'),
    startBrokenUpstream('silent'),
    refusedBaseUrl(),
  ]);
  return {
    models: [
      simulatedModel(),
      modelAt('refused/whole', refused),
      modelAt('refused/stream', refused),
      modelAt('refused/fallback', refused),
      modelAt('refused/stream-fallback', refused),
      modelAt('refused/breaker', refused),
      modelAt('reset', resetting.baseUrl),
      modelAt('dns', 'http://nonexistent.invalid/v1'),
      modelAt('dns/all-unavailable', 'http://nonexistent.invalid/v1'),
      modelAt('silent', silent.baseUrl),
      answering('http-500', 'answers-500'),
      answering('http-503', 'answers-503'),
      answering('http-529', 'answers-529'),
      answering('http-429', 'answers-429'),
      answering('http-503-retry-after', 'answers-503-retry-after'),
      answering('http-503-all-unavailable', 'answers-503-retry-after'),
      answering('http-429-retry-after', 'answers-429-retry-after'),
      answering('malformed', 'answers-malformed'),
      answering('http-401', 'answers-401'),
      answering('http-400', 'answers-400'),
      answering('drops', 'drops-after-first-byte'),
    ],
    timeouts: { connectMs: 1_000, firstByteMs: FIRST_BYTE_MS, idleMs: 2_000 },
    breaker: { consecutiveFailures: CONSECUTIVE_FAILURES, openMs: OPEN_MS, maxOpenMs: OPEN_MS },
    retry: { maxAttempts: MAX_ATTEMPTS, baseDelayMs: 10, maxDelayMs: 1_000 },
    started: [upstream, resetting, silent],
  };
});

function execute(modelId: string, fallbacks: string[] = []): ExecuteRequest {
  return { request_id: 'req-unavailable', model_id: modelId, fallbacks, request: { model: modelId, messages: [{ role: 'ROLE_USER', text: 'Hi' }] } };
}

const complete = (request: ExecuteRequest, signal?: AbortSignal) => completeOn(executor.client, request, signal);
const streamComplete = (request: ExecuteRequest) => streamCompleteOn(executor.client, request);

const unavailable = { code: GrpcStatus.UNAVAILABLE, reason: 'model_unavailable', retryable: true };

/** Counts the requests that reached an upstream; undefined where nothing can count them. */
type RequestCount = () => number | undefined;
const uncounted: RequestCount = () => undefined;

describe('an upstream that cannot be reached or cannot serve', () => {
  it.each<[string, string, RequestCount]>([
    ['refused/whole', 'connection refused', uncounted],
    ['reset', 'connection reset before any answer', () => resetting.requests()],
    ['dns', 'host name that does not resolve', uncounted],
    ['silent', 'no answer within the first-byte timeout', () => silent.requests()],
    ['http-500', '500 on every try', () => requestsFor('answers-500')],
    ['http-503', '503 on every try', () => requestsFor('answers-503')],
    ['http-529', '529 (overloaded) on every try', () => requestsFor('answers-529')],
    ['http-429', '429 without a retry hint on every try', () => requestsFor('answers-429')],
  ])(
    '%s (%s): UNAVAILABLE model_unavailable on the first request, after the retries, with the default retry-after',
    async (modelId, _what, upstreamRequests) => {
      const before = upstreamRequests();
      const failure = await failureOf(complete(execute(modelId)));
      expect(failure).toMatchObject({ ...unavailable, retryAfterMs: UNAVAILABLE_RETRY_AFTER_MS });
      expect(failure?.message).toBe(
        `The model \`${modelId}\` is temporarily unavailable: its provider cannot be reached or is overloaded. Please retry later.`,
      );
      // Where the upstream can count them: every try reached it before the model was given up.
      if (before !== undefined) expect(upstreamRequests()! - before).toBe(MAX_ATTEMPTS);
    },
  );

  it('a streamed request fails with the same status before its first event', async () => {
    const { events, error } = await streamComplete(execute('refused/stream'));
    expect(events).toEqual([]);
    expect(error).toMatchObject({ ...unavailable, retryAfterMs: UNAVAILABLE_RETRY_AFTER_MS });
  });

  it("takes its retry-after from the upstream's own hint when it gave one", async () => {
    const before = requestsFor('answers-503-retry-after');
    const failure = await failureOf(complete(execute('http-503-retry-after')));
    expect(failure).toMatchObject({ ...unavailable, retryAfterMs: 3_000, upstreamStatus: 503 });
    // A hint longer than the longest retry wait ends the tries at once.
    expect(requestsFor('answers-503-retry-after') - before).toBe(1);
  });

  it('a 429 whose hint holds the deployment out gives the remaining hold as retry-after, not 429', async () => {
    const failure = await failureOf(complete(execute('http-429-retry-after')));
    expect(failure).toMatchObject({ ...unavailable, upstreamStatus: 429 });
    expect(failure?.retryAfterMs).toBeGreaterThan(2_500);
    expect(failure?.retryAfterMs).toBeLessThanOrEqual(3_000);
  });

  it("answers the same from the first request to the one the open breaker refuses, with the breaker's remaining time once it is open", async () => {
    const first = await failureOf(complete(execute('refused/breaker')));
    expect(first).toMatchObject({ ...unavailable, retryAfterMs: UNAVAILABLE_RETRY_AFTER_MS });
    // The fourth failure in a row opens the breaker during the second request.
    const second = await failureOf(complete(execute('refused/breaker')));
    expect(second).toMatchObject(unavailable);
    expect(second?.retryAfterMs).toBeGreaterThan(OPEN_MS - 1_000);
    expect(second?.retryAfterMs).toBeLessThanOrEqual(OPEN_MS);
    const third = await failureOf(complete(execute('refused/breaker')));
    expect(third).toMatchObject(unavailable);
    expect(third?.retryAfterMs).toBeLessThanOrEqual(second!.retryAfterMs!);
    expect(third?.message).toBe('The model `refused/breaker` is temporarily unavailable: no deployment is healthy. Please retry later.');
  });
});

describe('fallbacks of an unreachable model', () => {
  it('answers from the next model, saying the first was unavailable after its tries', async () => {
    const response = await complete(execute('refused/fallback', ['sim-fast']));
    expect(response.model_id).toBe('sim-fast');
    expect(response.response?.choices[0]?.message?.content).toBeTruthy();
    expect(response.attempts).toEqual([{ model_id: 'refused/fallback', reason: 'model_unavailable', tries: MAX_ATTEMPTS }]);
  });

  it('answers a stream from the next model, naming what was tried on its first event', async () => {
    const { events, error } = await streamComplete(execute('refused/stream-fallback', ['sim-fast']));
    expect(error).toBeUndefined();
    expect(events[0]?.start).toMatchObject({
      model_id: 'sim-fast',
      attempts: [{ model_id: 'refused/stream-fallback', reason: 'model_unavailable', tries: MAX_ATTEMPTS }],
    });
    expect(events.at(-1)?.end?.model_id).toBe('sim-fast');
  });

  it('when every model is unavailable, names the first with the earliest retry-after', async () => {
    const failure = await failureOf(complete(execute('dns/all-unavailable', ['http-503-all-unavailable'])));
    expect(failure).toMatchObject({ ...unavailable, retryAfterMs: UNAVAILABLE_RETRY_AFTER_MS });
    expect(failure?.message).toContain('`dns/all-unavailable`');
  });
});

describe('an upstream that answered something unusable', () => {
  it('a body that is not the wire format is UNAVAILABLE upstream_error (502), after the retries', async () => {
    const failure = await failureOf(complete(execute('malformed')));
    expect(failure).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error' });
    expect(failure?.retryAfterMs).toBeUndefined();
    expect(requestsFor('answers-malformed')).toBe(MAX_ATTEMPTS);
  });

  it("a 401 (the gateway's key) is upstream_rejected, not retried", async () => {
    const failure = await failureOf(complete(execute('http-401', ['sim-fast'])));
    expect(failure).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', upstreamStatus: 401 });
    expect(requestsFor('answers-401')).toBe(1);
  });

  it("a 400 (the caller's request) keeps its mapping and is not sent to a fallback", async () => {
    const failure = await failureOf(complete(execute('http-400', ['sim-fast'])));
    expect(failure).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'upstream_invalid_request' });
    expect(requestsFor('answers-400')).toBe(1);
  });

  it('a stream whose connection drops after its first byte ends with a failure event and upstream_error, as before', async () => {
    const { events, error } = await streamComplete(execute('drops', ['sim-fast']));
    expect(events[0]?.start?.model_id).toBe('drops');
    expect(events.at(-1)?.failure).toMatchObject({ model_id: 'drops', usage_estimated: true });
    expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error' });
  });
});

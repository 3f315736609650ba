/**
 * Failure handling before the first byte, through the real gRPC server and the fake upstream:
 * retries with backoff and retry hints, the breaker, fallbacks, and cancellation of retries.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import type { ExecuteRequest } from '@gateway/proto';
import { replayJson, replaySse, startFakeUpstream, type FakeUpstream, type Responder, openAiCompatibleModel, simulatedModel, fixture } from '@gateway/testing';
import { completeOn, failureOf, streamCompleteOn } from '../testing/executor-calls.js';
import { upstreamAt, useExecutor } from '../testing/executor-under-test.js';

const OPEN_MS = 400;
let primary: FakeUpstream;
let secondary: FakeUpstream;

const failing = replayJson(503, fixture('error-500.json'));
const answering = replayJson(200, fixture('chat-completion.json'));

/** Fails the first `count` requests with `failure`, then answers with `then`. */
function failTimes(count: number, failure: Responder, then: Responder = answering): Responder {
  let seen = 0;
  return (request, response) => (seen++ < count ? failure(request, response) : then(request, response));
}

const executor = useExecutor(async () => {
  [primary, secondary] = await Promise.all([
    startFakeUpstream(replayJson(200, fixture('chat-completion.json'))),
    startFakeUpstream(replayJson(200, fixture('chat-completion.json'))),
  ]);
  return {
    models: [
      simulatedModel(),
      openAiCompatibleModel(primary.baseUrl, { id: 'fake/one' }),
      openAiCompatibleModel(primary.baseUrl, {
        id: 'fake/two',
        deployments: [upstreamAt(secondary.baseUrl)],
      }),
    ],
    timeouts: { connectMs: 1000, firstByteMs: 5000, idleMs: 5000 },
    breaker: { consecutiveFailures: 3, openMs: OPEN_MS, maxOpenMs: OPEN_MS },
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 1_000 },
    started: [primary, secondary],
  };
});

afterEach(async () => {
  // Every test starts with closed breakers: wait out any open one and let a request close it.
  primary.respond(answering);
  secondary.respond(answering);
  await new Promise((resolve) => setTimeout(resolve, OPEN_MS));
  for (const modelId of ['fake/one', 'fake/two']) {
    for (let i = 0; i < 2; i += 1) await complete(execute(modelId)).catch(() => undefined);
  }
  primary.requests.length = 0;
  secondary.requests.length = 0;
});

function execute(modelId: string, fallbacks: string[] = [], text = 'Hi'): ExecuteRequest {
  return { request_id: 'req-test', model_id: modelId, fallbacks, request: { model: modelId, messages: [{ role: 'ROLE_USER', text }] } };
}

const complete = (request: ExecuteRequest, signal?: AbortSignal) => completeOn(executor.client, request, signal);
const streamComplete = (request: ExecuteRequest) => streamCompleteOn(executor.client, request);

describe('retries before the first byte', () => {
  it('retries a retryable failure and answers once the upstream recovers', async () => {
    primary.respond(failTimes(2, failing));
    const response = await complete(execute('fake/one'));
    expect(response.model_id).toBe('fake/one');
    expect(response.attempts).toEqual([]);
    expect(primary.requests).toHaveLength(3);
  });

  it("waits for the upstream's retry hint before retrying a 429", async () => {
    primary.respond(failTimes(1, replayJson(429, fixture('error-429.json'), { 'retry-after-ms': '300' })));
    const started = performance.now();
    const response = await complete(execute('fake/one'));
    expect(response.response?.choices[0]?.message?.content).toBeTruthy();
    expect(primary.requests).toHaveLength(2);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('neither retries nor falls back on a failure the caller caused (400)', async () => {
    primary.respond(replayJson(400, fixture('error-400.json')));
    const failure = await failureOf(complete(execute('fake/one', ['sim-fast'])));
    expect(failure).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'upstream_invalid_request' });
    expect(primary.requests).toHaveLength(1);
  });

  it('retries on the other deployment of the model when one is down', async () => {
    primary.respond(failing);
    for (let i = 0; i < 4; i += 1) {
      const response = await complete(execute('fake/two'));
      expect(response.model_id).toBe('fake/two');
    }
    expect(secondary.requests).toHaveLength(4);
  });

  it('stops retrying the moment the caller cancels', async () => {
    primary.respond(replayJson(429, fixture('error-429.json'), { 'retry-after-ms': '800' }));
    const controller = new AbortController();
    const pending = failureOf(complete(execute('fake/one'), controller.signal));
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort();
    expect(await pending).toMatchObject({ code: GrpcStatus.CANCELLED });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(primary.requests).toHaveLength(1);
  });
});

describe('fallbacks', () => {
  it('answers from the next model when the first keeps failing, saying which answered and what was tried', async () => {
    primary.respond(failing);
    const response = await complete(execute('fake/one', ['sim-fast']));
    expect(response.model_id).toBe('sim-fast');
    expect(response.provider).toBe('simulated');
    expect(response.attempts).toMatchObject([{ model_id: 'fake/one', reason: 'model_unavailable', tries: 3, upstream_status: 503 }]);
  });

  it("names the answering model on a stream's first event and in its end", async () => {
    primary.respond(failing);
    const { events, error } = await streamComplete(execute('fake/one', ['no-such-model', 'sim-fast']));
    expect(error).toBeUndefined();
    const attempts = [
      { model_id: 'fake/one', reason: 'model_unavailable', tries: 3, upstream_status: 503 },
      { model_id: 'no-such-model', reason: 'model_not_found', tries: 0 },
    ];
    expect(events[0]?.start).toMatchObject({ model_id: 'sim-fast', provider: 'simulated', attempts });
    expect(events.at(-1)?.end).toMatchObject({ model_id: 'sim-fast', attempts });
  });

  it('does not fall back after the first byte: the stream fails with its partial usage', async () => {
    primary.respond(replaySse(fixture('stream-truncated.sse')));
    const { events, error } = await streamComplete(execute('fake/one', ['sim-fast']));
    expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error' });
    expect(events[0]?.start?.model_id).toBe('fake/one');
    expect(events.at(-1)?.failure).toMatchObject({ model_id: 'fake/one', usage_estimated: true });
    expect(events.at(-1)?.failure?.usage?.completion_tokens).toBeGreaterThan(0);
  });
});

describe('the circuit breaker', () => {
  it('opens after repeated failures: no upstream call, UNAVAILABLE model_unavailable with a retry-after; then a probe closes it', async () => {
    primary.respond(failing);
    await failureOf(complete(execute('fake/one')));
    expect(primary.requests).toHaveLength(3);
    const refused = await failureOf(complete(execute('fake/one')));
    expect(refused).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'model_unavailable', retryable: true });
    expect(refused?.retryAfterMs).toBeGreaterThan(0);
    expect(primary.requests).toHaveLength(3);
    expect(executor.deployments.health().find((entry) => entry.model_id === 'fake/one')?.state).toBe('DEPLOYMENT_STATE_OPEN');

    primary.respond(answering);
    await new Promise((resolve) => setTimeout(resolve, OPEN_MS));
    expect(executor.deployments.health().find((entry) => entry.model_id === 'fake/one')?.state).toBe('DEPLOYMENT_STATE_PROBING');
    const response = await complete(execute('fake/one'));
    expect(response.model_id).toBe('fake/one');
    expect(executor.deployments.health().find((entry) => entry.model_id === 'fake/one')?.state).toBe('DEPLOYMENT_STATE_HEALTHY');
  });

  it('skips a model whose breaker is open straight to its fallback', async () => {
    primary.respond(failing);
    await failureOf(complete(execute('fake/one')));
    const response = await complete(execute('fake/one', ['sim-fast']));
    expect(response.model_id).toBe('sim-fast');
    expect(response.attempts).toEqual([{ model_id: 'fake/one', reason: 'model_unavailable', tries: 0 }]);
    expect(primary.requests).toHaveLength(3);
  });
});

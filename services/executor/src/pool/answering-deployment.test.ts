/**
 * An answer names the deployment that served it (`<index>:<origin>`), whole and streamed: the
 * request log shows it beside the provider. Through the real gRPC server, against two fake
 * upstreams: a model's first deployment answering 503 and its second answering, so that a failover
 * is answered by the second, and a simulated model answering in-process.
 */
import { describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '@gateway/proto';
import { fixture, openAiCompatibleModel, replayJson, replaySse, simulatedModel, startFakeUpstream, type FakeUpstream, type Responder } from '@gateway/testing';
import { completeOn, streamCompleteOn } from '../testing/executor-calls.js';
import { upstreamAt, useExecutor } from '../testing/executor-under-test.js';

let failing: FakeUpstream;
let answering: FakeUpstream;

/** Answers whole or streamed, as the request asks. */
const answer: Responder = (request, response) =>
  (request.body.stream ? replaySse(fixture('stream-text.sse')) : replayJson(200, fixture('chat-completion.json')))(request, response);

const executor = useExecutor(async () => {
  [failing, answering] = await Promise.all([startFakeUpstream(replayJson(503, fixture('error-500.json'))), startFakeUpstream(answer)]);
  return {
    models: [
      simulatedModel(),
      openAiCompatibleModel(answering.baseUrl, { id: 'one-deployment' }),
      // Its own upstream (deployment 0) fails; deployment 1 answers.
      openAiCompatibleModel(failing.baseUrl, { id: 'failover', deployments: [upstreamAt(answering.baseUrl)] }),
    ],
    timeouts: { connectMs: 1_000, firstByteMs: 2_000, idleMs: 2_000 },
    // A breaker that never opens within the test: each request tries the failing deployment first.
    breaker: { consecutiveFailures: 1_000 },
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 100 },
    started: [failing, answering],
  };
});

function execute(modelId: string, stream = false): ExecuteRequest {
  return {
    request_id: 'req-deployment',
    model_id: modelId,
    request: { model: modelId, stream, messages: [{ role: 'ROLE_USER', text: 'Hi' }] },
  };
}

/**
 * Makes the answering deployment of `failover` look slow, so that the pool picks the failing one
 * first (an unmeasured deployment, or a faster one, is tried before a slow one).
 */
function failingFirst(): void {
  const [first, second] = executor.deployments.deploymentsOf('failover');
  expect(first!.id).toBe(`0:${new URL(failing.baseUrl).origin}`);
  second!.observeLatency(60_000);
}

describe('the deployment an answer names', () => {
  it('is the only deployment of a model, whole and streamed', async () => {
    const origin = new URL(answering.baseUrl).origin;
    expect((await completeOn(executor.client, execute('one-deployment'))).deployment_id).toBe(`0:${origin}`);
    const { events, error } = await streamCompleteOn(executor.client, execute('one-deployment', true));
    expect(error).toBeUndefined();
    expect(events.find((event) => event.start)?.start?.deployment_id).toBe(`0:${origin}`);
    expect(events.at(-1)?.end?.deployment_id).toBe(`0:${origin}`);
  });

  it('is the second deployment after the first failed, whole and streamed', async () => {
    const second = `1:${new URL(answering.baseUrl).origin}`;
    failingFirst();
    const before = failing.requests.length;
    const whole = await completeOn(executor.client, execute('failover'));
    expect(failing.requests.length).toBe(before + 1);
    expect(whole).toMatchObject({ model_id: 'failover', provider: 'openai-compatible', deployment_id: second });

    failingFirst();
    const { events, error } = await streamCompleteOn(executor.client, execute('failover', true));
    expect(error).toBeUndefined();
    expect(failing.requests.length).toBe(before + 2);
    expect(events.find((event) => event.start)?.start?.deployment_id).toBe(second);
    expect(events.at(-1)?.end?.deployment_id).toBe(second);
  });

  it('is in-process for a simulated model', async () => {
    expect((await completeOn(executor.client, execute('sim-fast'))).deployment_id).toBe('0:in-process');
  });
});

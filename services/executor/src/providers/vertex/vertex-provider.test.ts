import { describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import { providerFixture, replayJson, replaySse, startFakeGoogleAuth, vertexGate, vertexModel } from '@gateway/testing';
import { chunksOf, simpleRequest, textOf } from '../../testing/provider-calls.js';
import { expectRetryableUnavailable } from '../../testing/provider-under-test.js';
import { useVertexUnderTest } from '../../testing/fake-google-auth.js';
import { VertexProvider } from './vertex-provider.js';

const gemini = (name: string) => providerFixture('gemini', name);
const vertex = (name: string) => providerFixture('vertex', name);

// Workload identity federation: the adapter's tokens come from the fake STS, through
// google-auth-library, for the subject token in a file, as on EKS or AKS.
const { google, under } = useVertexUnderTest('federation', (dependencies) => new VertexProvider(dependencies), vertexModel);

const { gated } = google;

describe('VertexProvider: requests it sends', () => {
  it("posts the Gemini body to the region's generateContent with a federated token, fetched once for many calls", async () => {
    await under.completeWith(gated(replayJson(200, gemini('generate-content.json'))));
    await under.completeWith(gated(replayJson(200, gemini('generate-content.json'))));
    await under.streamWith(gated(replaySse(gemini('stream-text.sse'))));
    const [first, second, streamed] = under.upstream.requests;
    expect(first?.path).toBe('/v1/projects/acme-prod-ml/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent');
    expect(streamed?.path).toBe('/v1/projects/acme-prod-ml/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(first?.headers.authorization).toMatch(/^Bearer ya29\.fake-sts-/);
    expect(second?.headers.authorization).toBe(first?.headers.authorization);
    expect(first?.headers['x-goog-api-key']).toBeUndefined();
    expect(first?.body).toMatchObject({ contents: [{ role: 'user', parts: [{ text: 'Hello!' }] }] });
    // The library keeps the token until it nears its end: one exchange for the three calls.
    expect(google.auth.tokenRequests).toEqual([{ via: 'sts', granted: true }]);
  });
});

describe('VertexProvider: answers', () => {
  it('answers whole with the text and usage the Gemini API answer has', async () => {
    const response = await under.completeWith(gated(replayJson(200, gemini('generate-content.json'))));
    expect(response.choices?.[0]?.message?.content).toBeTruthy();
    expect(response.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(response.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(response.model).toBe(under.model.id);
  });

  it('turns function calls into tool calls, whole and streamed', async () => {
    const tools = simpleRequest({
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', parameters_json: JSON.stringify({ type: 'object', properties: { location: { type: 'string' } } }) },
        },
      ],
    });
    const whole = await under.completeWith(gated(replayJson(200, gemini('generate-content-function-call.json'))), tools);
    expect(under.upstream.requests.at(-1)?.body).toMatchObject({ tools: [{ functionDeclarations: [{ name: 'get_weather' }] }] });
    expect(whole.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(whole.choices?.[0]?.message?.tool_calls?.map((call) => call.function?.name)).toEqual(['get_weather', 'get_time']);
    const events = await under.streamWith(gated(replaySse(gemini('stream-function-call.sse'))), tools);
    const deltas = chunksOf(events).flatMap((chunk) => chunk.choices?.[0]?.delta?.tool_calls ?? []);
    expect(deltas.map((delta) => delta.function?.name)).toEqual(['get_weather', 'get_time']);
  });

  it('streams text chunks then the final usage', async () => {
    const events = await under.streamWith(gated(replaySse(gemini('stream-text.sse'))));
    expect(textOf(chunksOf(events))).toBe('Hello! How can I help?');
    expect(events.at(-1)).toMatchObject({ type: 'usage', usage: { prompt_tokens: 1033, completion_tokens: 7 } });
  });

  it('maps a safety stop and a blocked prompt to content_filter', async () => {
    const body = JSON.parse(gemini('generate-content.json')) as { candidates: Array<Record<string, unknown>> };
    const safety = JSON.stringify({ ...body, candidates: [{ ...body.candidates[0], finishReason: 'SAFETY' }] });
    expect((await under.completeWith(gated(replayJson(200, safety)))).choices?.[0]?.finish_reason).toBe('FINISH_REASON_CONTENT_FILTER');
    expect((await under.completeWith(gated(replayJson(200, gemini('blocked-prompt.json'))))).choices?.[0]?.finish_reason).toBe('FINISH_REASON_CONTENT_FILTER');
  });
});

describe('VertexProvider: upstream failures', () => {
  it('maps 400 INVALID_ARGUMENT to INVALID_ARGUMENT with the upstream message', async () => {
    await under.expectInvalidRequest(gated(replayJson(400, gemini('error-400.json'))), 'Unknown name "additionalProperties"');
  });

  it('maps a token Vertex does not accept (401) and a missing IAM permission (403) to FAILED_PRECONDITION, showing no token', async () => {
    const stranger = await startFakeGoogleAuth();
    try {
      const refused = await under.failureOf(vertexGate(stranger, replayJson(200, gemini('generate-content.json'))));
      expect(refused).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', retryable: false, upstreamStatus: 401 });
      expect(refused.message).not.toContain('ya29.');
    } finally {
      await stranger.close();
    }
    expect(await under.failureOf(gated(replayJson(403, vertex('error-403-permission.json'))))).toMatchObject({
      code: GrpcStatus.FAILED_PRECONDITION,
      reason: 'upstream_rejected',
      upstreamStatus: 403,
    });
  });

  it("maps the project's quota (429 RESOURCE_EXHAUSTED) to RESOURCE_EXHAUSTED with its Retry-After, whole and streamed", async () => {
    for (const call of ['complete', 'stream'] as const) {
      await under.expectRateLimited(gated(replayJson(429, vertex('error-429-quota.json'), { 'retry-after': '7' })), 7_000, call);
    }
  });

  it('maps 503 UNAVAILABLE and 500 to retryable UNAVAILABLE', async () => {
    await expectRetryableUnavailable(under.failureOf(gated(replayJson(503, gemini('error-503.json')))), 503);
    await expectRetryableUnavailable(under.failureOf(gated(replayJson(500, gemini('error-500.json')))), 500);
  });
});

describe('VertexProvider: cancellation', () => {
  it('closes the upstream connection promptly when a stream is aborted', () =>
    under.expectStreamAbortClosesUpstream(gated(replaySse(gemini('stream-text.sse'), { delayMs: 5_000, end: false }))));

  it('releases the connection when the caller stops reading early', () =>
    under.expectEarlyLeaveReleasesUpstream(gated(replaySse(gemini('stream-text.sse'), { delayMs: 5_000, end: false }))));
});

import { describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import { fakeVectorOf, fakeVertexEmbeddings, replayJson, startFakeGoogleAuth, vertexGate, vertexModel, providerFixture } from '@gateway/testing';
import { gatewayErrorOf, textBatch, valuesOf } from '../../testing/provider-calls.js';
import { useVertexUnderTest } from '../../testing/fake-google-auth.js';
import { VertexProvider } from './vertex-provider.js';

// Workload identity federation, as for chat: the token comes from the fake STS through google-auth-library.
const { google, under } = useVertexUnderTest(
  'federation',
  (dependencies) => new VertexProvider(dependencies),
  (origin) =>
    vertexModel(origin, {
      id: 'fake/vertex-text-embedding-005',
      kind: 'embedding',
      embedding: { dimensions: 768, shortenable: true },
      upstream: { model: 'text-embedding-005' },
    }),
);

describe('VertexProvider embeddings', () => {
  it("posts the instances to the model's :predict with the federated token, and reads the vectors in order with their token counts", async () => {
    under.upstream.respond(google.gated(fakeVertexEmbeddings({ dimensions: 768 })));
    const inputs = ['first text here', 'second', 'the third one of four', 'four'];
    const result = await under.embed(textBatch(inputs));
    const sent = under.upstream.requests[0]!;
    expect(sent.path).toBe('/v1/projects/acme-prod-ml/locations/us-central1/publishers/google/models/text-embedding-005:predict');
    expect(sent.headers.authorization).toMatch(/^Bearer ya29\.fake-sts-/);
    expect(sent.body).toEqual({ instances: inputs.map((content) => ({ content })) });
    expect(valuesOf(result.vectors)).toEqual(inputs.map((text) => fakeVectorOf(text, 768)));
    expect(result.promptTokens).toBe(3 + 1 + 5 + 1);
    expect(under.provider.embeddings.textOnly).toBe(true);
  });

  it('passes dimensions as outputDimensionality', async () => {
    under.upstream.respond(google.gated(fakeVertexEmbeddings({ dimensions: 768 })));
    const result = await under.embed(textBatch(['short'], 64));
    expect(under.upstream.requests[0]!.body).toEqual({ instances: [{ content: 'short' }], parameters: { outputDimensionality: 64 } });
    expect(valuesOf(result.vectors)).toEqual([fakeVectorOf('short', 64)]);
  });

  it('maps a token Vertex does not accept to FAILED_PRECONDITION, showing no token, and quota to a retryable rate limit', async () => {
    const stranger = await startFakeGoogleAuth();
    try {
      under.upstream.respond(vertexGate(stranger, fakeVertexEmbeddings()));
      const refused = await gatewayErrorOf(under.embed(textBatch(['a'])));
      expect(refused).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', upstreamStatus: 401 });
      expect(refused.message).not.toContain('ya29.');
    } finally {
      await stranger.close();
    }
    under.upstream.respond(google.gated(replayJson(429, providerFixture('vertex', 'error-429-quota.json'), { 'retry-after': '7' })));
    expect(await gatewayErrorOf(under.embed(textBatch(['a'])))).toMatchObject({ code: GrpcStatus.RESOURCE_EXHAUSTED, retryable: true, retryAfterMs: 7000 });
  });

  it('maps a refused batch (400 INVALID_ARGUMENT) to the caller’s 400, and fewer predictions than instances to a malformed answer', async () => {
    under.upstream.respond(google.gated(fakeVertexEmbeddings()));
    const tooMany = await gatewayErrorOf(under.embed(textBatch(Array.from({ length: 251 }, (_, index) => `text ${index}`))));
    expect(tooMany).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, upstreamStatus: 400 });
    expect(tooMany.message).toContain('greater than the maximum allowed 250');
    under.upstream.respond(google.gated(replayJson(200, JSON.stringify({ predictions: [{ embeddings: { values: [1, 2] } }] }))));
    await expect(under.embed(textBatch(['a', 'b']))).rejects.toMatchObject({ kind: 'malformed' });
  });
});

import { describe, expect, it } from 'vitest';
import { fakeGeminiEmbeddings, fakeVectorOf, replayJson, geminiModel, PROVIDER_TEST_KEY, providerFixture } from '@gateway/testing';
import { useProviderUnderTest } from '../../testing/provider-under-test.js';
import { textBatch } from '../../testing/provider-calls.js';
import { UpstreamError } from '../upstream-error.js';
import { GeminiProvider } from './gemini-provider.js';

const fixture = (name: string) => providerFixture('gemini', name);

const under = useProviderUnderTest({
  create: (dependencies) => new GeminiProvider(dependencies),
  modelOf: (baseUrl) => geminiModel(new URL(baseUrl).origin, { kind: 'embedding', upstream: { model: 'gemini-embedding-001' } }),
});

const f32 = (values: number[]) => Array.from(Float32Array.from(values));

describe('GeminiProvider embeddings', () => {
  it('embeds one input with embedContent, the key in x-goog-api-key', async () => {
    under.upstream.respond(replayJson(200, fixture('embed-content.json')));
    const result = await under.embed(textBatch(['What is the meaning of life?'], 4));
    const sent = under.upstream.requests[0]!;
    expect(sent.path).toBe('/v1beta/models/gemini-embedding-001:embedContent');
    expect(sent.headers['x-goog-api-key']).toBe(PROVIDER_TEST_KEY);
    expect(sent.path).not.toContain(PROVIDER_TEST_KEY);
    expect(sent.body).toEqual({ content: { parts: [{ text: 'What is the meaning of life?' }] }, outputDimensionality: 4 });
    expect(result.vectors.map((vector) => Array.from(vector))).toEqual([f32([0.0023064255, -0.009327292, 0.015797347, -0.0077780345])]);
    // Gemini reports no token count: the executor counts.
    expect(result.promptTokens).toBeUndefined();
  });

  it('embeds several with batchEmbedContents, each request naming the model', async () => {
    under.upstream.respond(replayJson(200, fixture('batch-embed-contents.json')));
    const result = await under.embed(textBatch(['first', 'second']));
    const sent = under.upstream.requests[0]!;
    expect(sent.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(sent.body).toEqual({
      requests: [
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'first' }] } },
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'second' }] } },
      ],
    });
    expect(result.vectors).toHaveLength(2);
  });

  it('is answered by the fake upstream that checks the key and the batch, in order', async () => {
    under.upstream.respond(fakeGeminiEmbeddings({ key: PROVIDER_TEST_KEY }));
    const inputs = Array.from({ length: 100 }, (_, index) => `text ${index}`);
    const result = await under.embed(textBatch(inputs, 3));
    expect(result.vectors.map((vector) => Array.from(vector))).toEqual(inputs.map((text) => fakeVectorOf(text, 3)));
  });

  it('fails on a wrong key as Gemini refuses it (400 API_KEY_INVALID), read as the 401 it means, not retryable', async () => {
    under.upstream.respond(fakeGeminiEmbeddings({ key: 'another-key' }));
    const failure = await under.embed(textBatch(['a'])).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure).toMatchObject({ status: 401, retryable: false });
  });

  it('refuses a batch answer with fewer embeddings than inputs', async () => {
    under.upstream.respond(replayJson(200, fixture('batch-embed-contents.json')));
    await expect(under.embed(textBatch(['a', 'b', 'c']))).rejects.toMatchObject({ kind: 'malformed' });
  });
});

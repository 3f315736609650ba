import { describe, expect, it } from 'vitest';
import { fakeOpenAiEmbeddings, fakeVectorOf, replayJson, replayRaw, openAiCompatibleModel, TEST_KEY, TEST_KEY_ENV, providerFixture } from '@gateway/testing';
import { useProviderUnderTest } from '../../testing/provider-under-test.js';
import { textBatch } from '../../testing/provider-calls.js';
import { UpstreamError } from '../upstream-error.js';
import { OpenAiCompatibleProvider } from './openai-compatible-provider.js';

const fixture = (name: string) => providerFixture('openai-compatible', name);

const under = useProviderUnderTest({
  environment: { [TEST_KEY_ENV]: TEST_KEY },
  create: (dependencies) => new OpenAiCompatibleProvider(dependencies),
  modelOf: (baseUrl) => openAiCompatibleModel(baseUrl, { kind: 'embedding', upstream: { model: 'text-embedding-3-small' } }),
});

/** The fixture's two vectors, as float32 values. */
const FIXTURE_VECTORS = [
  Array.from(Float32Array.from([0.0023064255, -0.009327292, 0.015797347, -0.0077780345])),
  Array.from(Float32Array.from([-0.0049185935, 0.0023064255, -0.017140485, 0.010102378])),
];

describe('OpenAiCompatibleProvider embeddings', () => {
  it('posts CreateEmbeddingRequest to {base_url}/embeddings with the bearer key, asking for base64', async () => {
    under.upstream.respond(replayJson(200, fixture('embeddings-base64.json')));
    await under.embed({ ...textBatch(['a', 'b'], 512), user: 'user-7' });
    const sent = under.upstream.requests[0]!;
    expect(sent.path).toBe('/v1/embeddings');
    expect(sent.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(sent.body).toEqual({ model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format: 'base64', dimensions: 512, user: 'user-7' });
  });

  it('reads base64 float32 vectors in the order of their index, and the upstream usage', async () => {
    under.upstream.respond(replayJson(200, fixture('embeddings-base64.json')));
    const result = await under.embed(textBatch(['first', 'second']));
    expect(result.vectors.map((vector) => Array.from(vector))).toEqual(FIXTURE_VECTORS);
    expect(result.promptTokens).toBe(8);
  });

  it('reads JSON numbers from a server that ignores the encoding', async () => {
    under.upstream.respond(replayJson(200, fixture('embeddings.json')));
    const result = await under.embed(textBatch(['first', 'second']));
    expect(result.vectors.map((vector) => Array.from(vector))).toEqual(FIXTURE_VECTORS);
  });

  it('sends token ids as arrays, and the fake upstream that checks the key answers them', async () => {
    under.upstream.respond(fakeOpenAiEmbeddings({ key: TEST_KEY }));
    const result = await under.embed({ texts: [], tokenArrays: [[1, 2], [3]], dimensions: 4, user: '' });
    expect(under.upstream.requests[0]!.body.input).toEqual([[1, 2], [3]]);
    expect(result.vectors.map((vector) => Array.from(vector))).toEqual([fakeVectorOf('1 2', 4), fakeVectorOf('3', 4)]);
    // The fake counts a token per id.
    expect(result.promptTokens).toBe(3);
  });

  it('fails on a wrong key as the upstream refuses it, without the key in the error', async () => {
    under.upstream.respond(fakeOpenAiEmbeddings({ key: 'sk-another-key' }));
    const failure = await under.embed(textBatch(['a'])).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure).toMatchObject({ status: 401, retryable: false });
    expect(JSON.stringify(failure)).not.toContain(TEST_KEY);
  });

  it('refuses an answer with fewer vectors than inputs, or a vector that is no list of numbers', async () => {
    under.upstream.respond(replayJson(200, fixture('embeddings.json')));
    await expect(under.embed(textBatch(['a', 'b', 'c']))).rejects.toMatchObject({ kind: 'malformed' });
    under.upstream.respond(replayJson(200, JSON.stringify({ object: 'list', data: [{ index: 0, embedding: { values: [1] } }] })));
    await expect(under.embed(textBatch(['a']))).rejects.toMatchObject({ kind: 'malformed' });
    under.upstream.respond(replayRaw(200, '{"object":"list","data":[', 'application/json'));
    await expect(under.embed(textBatch(['a']))).rejects.toMatchObject({ kind: 'malformed' });
  });
});

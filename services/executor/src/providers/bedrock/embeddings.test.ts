import { describe, expect, it } from 'vitest';
import type { CatalogModel } from '@gateway/catalog';
import { GatewayError, GrpcStatus } from '@gateway/grpc';
import { fakeVectorOf, bedrockModel } from '@gateway/testing';
import { gatewayErrorOf, textBatch, valuesOf } from '../../testing/provider-calls.js';
import { shortened } from '../embedding-vectors.js';
import type { EmbeddingBatch } from '../provider.js';
import { BedrockProvider } from './bedrock-provider.js';
import { bedrockError, contextOn, useBedrockUnderTest } from '../../testing/bedrock-under-test.js';

const CREDENTIALS = { accessKeyId: 'AKIAFAKEBEDROCKEMBED', secretAccessKey: 'fake-embed-secret-0123456789abcdefghijklmnop' };

const bedrock = useBedrockUnderTest(CREDENTIALS);

const modelOf = (modelId: string, dimensions: number): CatalogModel =>
  bedrockModel(bedrock.fake.baseUrl, {
    id: `bedrock/${modelId}`,
    kind: 'embedding',
    embedding: { dimensions, shortenable: modelId.startsWith('amazon.') },
    upstream: { model: modelId },
  });
const TITAN = () => modelOf('amazon.titan-embed-text-v2:0', 1024);
const COHERE = () => modelOf('cohere.embed-english-v3', 1024);

const embed = (model: CatalogModel, batch: EmbeddingBatch, on: BedrockProvider = bedrock.provider) => on.embeddings.embed(batch, contextOn(model));

describe('BedrockProvider embeddings: Titan Text Embeddings V2', () => {
  it('sends one signed InvokeModel per text and keeps the vectors in the order of the texts, with the tokens Titan counts', async () => {
    bedrock.fake.reply(() => ({ kind: 'embed' }));
    const inputs = ['the first text', 'second', 'a third one here', 'four', 'five words in this one'];
    const result = await embed(TITAN(), textBatch(inputs));
    expect(bedrock.fake.refusals).toEqual([]);
    expect(bedrock.fake.requests).toHaveLength(5);
    for (const request of bedrock.fake.requests) {
      expect(request).toMatchObject({ operation: 'invoke', modelId: 'amazon.titan-embed-text-v2:0', signedBy: CREDENTIALS.accessKeyId });
      expect(request.path).toBe('/model/amazon.titan-embed-text-v2%3A0/invoke');
    }
    expect(bedrock.fake.requests.map((request) => request.body).sort((a, b) => String(a.inputText).localeCompare(String(b.inputText)))).toEqual(
      [...inputs].sort().map((inputText) => ({ inputText, normalize: true })),
    );
    expect(valuesOf(result.vectors)).toEqual(inputs.map((text) => fakeVectorOf(text, 1024)));
    expect(result.promptTokens).toBe(3 + 1 + 4 + 1 + 5);
  });

  it('asks Titan for the next length it gives and shortens to the asked dimensions', async () => {
    bedrock.fake.reply(() => ({ kind: 'embed' }));
    const result = await embed(TITAN(), textBatch(['shorter please'], 300));
    expect(bedrock.fake.requests[0]!.body).toEqual({ inputText: 'shorter please', normalize: true, dimensions: 512 });
    expect(valuesOf(result.vectors)).toEqual(valuesOf([shortened(Float32Array.from(fakeVectorOf('shorter please', 512)), 300)]));
    expect(result.vectors[0]).toHaveLength(300);
    await embed(TITAN(), textBatch(['exactly'], 256));
    expect(bedrock.fake.requests[1]!.body).toEqual({ inputText: 'exactly', normalize: true, dimensions: 256 });
  });

  it('maps throttling to a retryable rate limit, and a wrong secret to the refusal AWS sends, the secret in no message', async () => {
    bedrock.fake.reply(() => bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.'));
    const throttled = await gatewayErrorOf(embed(TITAN(), textBatch(['a', 'b'])));
    expect(throttled).toMatchObject({ code: GrpcStatus.RESOURCE_EXHAUSTED, reason: 'upstream_rate_limited', retryable: true });
    bedrock.fake.reply(() => ({ kind: 'embed' }));
    const wrong = new BedrockProvider({
      pools: bedrock.pools,
      environment: {},
      awsCredentials: async () => ({ ...CREDENTIALS, secretAccessKey: 'not-the-embed-secret-0123456789abcdefghij' }),
    });
    const refused = await gatewayErrorOf(embed(TITAN(), textBatch(['a']), wrong));
    expect(refused).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', upstreamStatus: 403 });
    expect(bedrock.fake.refusals).toEqual([expect.stringMatching(/^403 InvalidSignatureException/)]);
    expect(refused.message).not.toContain('not-the-embed-secret');
  });
});

describe('BedrockProvider embeddings: Cohere Embed', () => {
  it('sends the batch in one call with input_type search_document, reads the vectors in order and the token header', async () => {
    bedrock.fake.reply(() => ({ kind: 'embed' }));
    const inputs = ['alpha beta', 'gamma', 'delta epsilon zeta'];
    const result = await embed(COHERE(), textBatch(inputs));
    expect(bedrock.fake.refusals).toEqual([]);
    expect(bedrock.fake.requests).toHaveLength(1);
    expect(bedrock.fake.requests[0]).toMatchObject({ path: '/model/cohere.embed-english-v3/invoke', body: { texts: inputs, input_type: 'search_document' } });
    expect(valuesOf(result.vectors)).toEqual(inputs.map((text) => fakeVectorOf(text, 1024)));
    expect(result.promptTokens).toBe(6);
    expect(bedrock.provider.embeddings.batchSize).toBe(96);
    expect(bedrock.provider.embeddings.textOnly).toBe(true);
  });

  it('answers a ValidationException as the caller’s 400, and a model id of neither family as unavailable before any call', async () => {
    bedrock.fake.reply(() => bedrockError(400, 'ValidationException', 'Malformed input request: #/texts: expected maximum item count: 96'));
    const invalid = await gatewayErrorOf(embed(COHERE(), textBatch(['a'])));
    expect(invalid).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'upstream_invalid_request', upstreamStatus: 400 });
    expect(invalid.message).toContain('expected maximum item count: 96');
    const chat = modelOf('us.anthropic.claude-sonnet-4-20250514-v1:0', 1024);
    const unknown = (await embed(chat, textBatch(['a'])).catch((error: unknown) => error)) as GatewayError;
    expect(unknown).toBeInstanceOf(GatewayError);
    expect(unknown).toMatchObject({ reason: 'model_unavailable' });
    expect(unknown.message).toContain('neither a Titan Text Embeddings nor a Cohere Embed model');
    expect(bedrock.fake.requests).toHaveLength(1);
  });

  it('the fake refuses what Bedrock refuses: an unknown field, and a Titan V2 length it does not give', async () => {
    bedrock.fake.reply(() => ({ kind: 'embed' }));
    const sign = (body: object) => bedrock.provider.invoke(JSON.stringify(body), contextOn(TITAN()));
    await expect(sign({ inputText: 'a', dimensions: 300 })).rejects.toMatchObject({ status: 400 });
    await expect(sign({ inputText: 'a', input_type: 'search_query' })).rejects.toMatchObject({ status: 400 });
    expect(bedrock.fake.refusals).toEqual([
      expect.stringContaining('#/dimensions: 300 is not a valid enum value'),
      expect.stringContaining('extraneous key [input_type] is not permitted'),
    ]);
  });
});

/**
 * POST /v1/embeddings on the three clouds, end to end, with the official `openai` client's
 * `embeddings.create`: an Azure OpenAI deployment (the `api-key` checked by the fake Azure), Amazon
 * Titan Text Embeddings V2 and Cohere Embed on Bedrock (InvokeModel, SigV4 recomputed by the fake
 * Bedrock with the secret of the access key AWS's credential chain read from the environment), and
 * text-embedding-005 on Vertex AI (`:predict` under a token google-auth-library obtained from the
 * fake STS by workload identity federation). Each catalog entry takes two inputs a call, so five
 * inputs are split upstream and joined back in order. What a user notices: each input's vector in
 * its place, the length asked, the tokens the cloud counted, the cost of those tokens at the
 * model's price, and the same in GET /v1/usage.
 */
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costPicoUsd, picoUsdToUsd, usdPerMtokToMicro } from '@gateway/catalog';
import {
  azureOpenAi,
  fakeOpenAiEmbeddings,
  fakeVectorOf,
  fakeVertexEmbeddings,
  startFakeBedrock,
  startFakeUpstream,
  type FakeBedrock,
  type FakeGoogleAuth,
  type FakeUpstream,
} from '@gateway/testing';
import { federationEnv, startFakeVertex } from './cloud-credentials.js';
import { writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';

const REGION = 'us-east-1';
const AWS_KEY = { accessKeyId: 'AKIAFAKECLOUDEMBED01', secretAccessKey: 'fake-cloud-embeddings-secret-0123456789abcdef' };
const AZURE_KEY_VARIABLE = 'FAKE_AZURE_EMBEDDINGS_KEY';
const AZURE_KEY = 'azure-embeddings-key-0123456789abcdef';

let azure: FakeUpstream;
let vertex: FakeUpstream;
let bedrock: FakeBedrock;
let auth: FakeGoogleAuth;
const gateway = new ClusterFixture();

/** An embedding model's catalog entry: two inputs a call at most. */
function entry(id: string, provider: string, upstream: string, price: string, dimensions: number, shortenable: boolean): string {
  return `  - id: ${id}
    provider: ${provider}
    kind: embedding
    owned_by: tests
    created: 1735689600
    upstream: ${upstream}
    pricing: { input: "${price}" }
    context_window: 8192
    embedding: { dimensions: ${dimensions}, shortenable: ${shortenable}, batch_size: 2 }`;
}

const picoOf = (tokens: number, price: string) =>
  costPicoUsd({ input_micro_usd_per_mtok: usdPerMtokToMicro(price), output_micro_usd_per_mtok: 0 } as never, { prompt_tokens: tokens });

/** Words the fakes count as tokens: one per whitespace-separated word. */
const words = (texts: readonly string[]) => texts.reduce((sum, text) => sum + text.split(/\s+/).filter(Boolean).length, 0);

const INPUTS = ['the first input', 'second', 'a third one here', 'four', 'and the fifth input text'];

beforeAll(async () => {
  azure = await startFakeUpstream(azureOpenAi({ apiKey: AZURE_KEY }, fakeOpenAiEmbeddings({ dimensions: 16 })));
  bedrock = await startFakeBedrock({ region: REGION, credentials: [AWS_KEY] });
  bedrock.reply(() => ({ kind: 'embed' }));
  ({ google: auth, vertex } = await startFakeVertex(fakeVertexEmbeddings({ dimensions: 768 })));
  const catalog = writeCatalog('cloud-embeddings-e2e', [
    entry(
      'azure-embedding',
      'azure',
      `{ model: text-embedding-3-small, base_url: "${new URL(azure.baseUrl).origin}", deployment: embed-prod, api_version: "2024-10-21", api_key_env: ${AZURE_KEY_VARIABLE} }`,
      '0.02',
      16,
      true,
    ),
    entry(
      'bedrock-titan-embedding',
      'bedrock',
      `{ model: "amazon.titan-embed-text-v2:0", region: ${REGION}, base_url: "${bedrock.baseUrl}" }`,
      '0.02',
      1024,
      true,
    ),
    entry('bedrock-cohere-embedding', 'bedrock', `{ model: cohere.embed-english-v3, region: ${REGION}, base_url: "${bedrock.baseUrl}" }`, '0.10', 1024, false),
    entry(
      'vertex-embedding',
      'vertex',
      `{ model: text-embedding-005, project: acme-prod-ml, region: us-central1, base_url: "${new URL(vertex.baseUrl).origin}", api_key_env: VERTEX_EMBEDDING_CREDENTIALS }`,
      '0.025',
      768,
      true,
    ),
  ]);
  await gateway.start({
    env: {
      CATALOG_PATH: catalog,
      [AZURE_KEY_VARIABLE]: AZURE_KEY,
      // AWS's credential chain reads the access key from the environment; nothing else of the machine's.
      AWS_ACCESS_KEY_ID: AWS_KEY.accessKeyId,
      AWS_SECRET_ACCESS_KEY: AWS_KEY.secretAccessKey,
      AWS_CONFIG_FILE: join(gateway.directory, 'aws-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(gateway.directory, 'aws-credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
      ...federationEnv(auth, 'VERTEX_EMBEDDING_CREDENTIALS', gateway.directory),
    },
  });
});

afterAll(async () => {
  await gateway.stop(azure, vertex, bedrock, auth);
});

describe('embeddings.create on each cloud', () => {
  it.each([
    { model: 'azure-embedding', price: '0.02', length: 16, calls: () => azure.requests.length },
    {
      model: 'bedrock-titan-embedding',
      price: '0.02',
      length: 1024,
      calls: () => bedrock.requests.filter((request) => request.modelId.startsWith('amazon.')).length,
    },
    {
      model: 'bedrock-cohere-embedding',
      price: '0.10',
      length: 1024,
      calls: () => bedrock.requests.filter((request) => request.modelId.startsWith('cohere.')).length,
    },
    { model: 'vertex-embedding', price: '0.025', length: 768, calls: () => vertex.requests.length },
  ])('$model: each input’s vector in its place, the cloud’s tokens, priced in the response and in the usage API', async ({ model, price, length, calls }) => {
    const response = await gateway.openai.embeddings.create({ model, input: INPUTS });
    expect(response.model).toBe(model);
    expect(response.data.map((item) => item.index)).toEqual([0, 1, 2, 3, 4]);
    expect(response.data.map((item) => item.embedding)).toEqual(INPUTS.map((text) => Array.from(Float32Array.from(fakeVectorOf(text, length)))));
    const tokens = words(INPUTS);
    expect(response.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    // Five inputs, two a call: three calls (Titan takes one text a call: five).
    expect(calls()).toBe(model === 'bedrock-titan-embedding' ? 5 : 3);
    const pico = picoOf(tokens, price);
    expect((response as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd).toBe(picoUsdToUsd(pico));
    const row = await gateway.usageRow(model, 1);
    expect(row).toMatchObject({ requests: 1, prompt_tokens: tokens, completion_tokens: 0, errors: 0, cost_pico_usd: String(pico) });
  });

  it('passes dimensions to the clouds that shorten: Azure and Vertex upstream, Titan the next size up shortened by the gateway', async () => {
    const azureAnswer = await gateway.openai.embeddings.create({ model: 'azure-embedding', input: 'short', dimensions: 4 });
    expect(azureAnswer.data[0]!.embedding).toEqual(fakeVectorOf('short', 4));
    const vertexAnswer = await gateway.openai.embeddings.create({ model: 'vertex-embedding', input: 'short', dimensions: 32 });
    expect(vertexAnswer.data[0]!.embedding).toHaveLength(32);
    expect(vertex.requests.at(-1)!.body).toMatchObject({ parameters: { outputDimensionality: 32 } });
    const titan = await gateway.openai.embeddings.create({ model: 'bedrock-titan-embedding', input: 'short', dimensions: 300 });
    expect(titan.data[0]!.embedding).toHaveLength(300);
    expect(bedrock.requests.at(-1)!.body).toEqual({ inputText: 'short', normalize: true, dimensions: 512 });
    const norm = Math.sqrt(titan.data[0]!.embedding.reduce((sum, value) => sum + value * value, 0));
    expect(norm).toBeCloseTo(1, 5);
  });

  it('refuses token ids on Bedrock and Vertex, which take text, with a 400 naming the input', async () => {
    for (const model of ['bedrock-cohere-embedding', 'vertex-embedding']) {
      const failure = await gateway.openai.embeddings.create({ model, input: [[1, 2, 3]] }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
      expect((failure as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ type: 'invalid_request_error' });
    }
  });
});

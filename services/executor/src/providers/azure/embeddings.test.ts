import { ClientSecretCredential } from '@azure/identity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import {
  azureOpenAi,
  fakeOpenAiEmbeddings,
  fakeVectorOf,
  startFakeEntra,
  type FakeEntra,
  azureModel,
  PROVIDER_TEST_KEY,
  PROVIDER_TEST_KEY_ENV,
} from '@gateway/testing';
import { gatewayErrorOf, textBatch, valuesOf } from '../../testing/provider-calls.js';
import { useProviderUnderTest } from '../../testing/provider-under-test.js';
import { azureUrl, AzureProvider } from './azure-provider.js';

/** Azure's checks (route, api-version, api-key) in front of OpenAI's embeddings. */
const azureEmbeddings = (apiKey = PROVIDER_TEST_KEY) => azureOpenAi({ apiKey }, fakeOpenAiEmbeddings({ dimensions: 16 }));

const under = useProviderUnderTest({
  create: (dependencies) => new AzureProvider(dependencies),
  modelOf: (baseUrl) =>
    azureModel(new URL(baseUrl).origin, {
      id: 'azure/text-embedding-3-small',
      kind: 'embedding',
      embedding: { dimensions: 16, shortenable: true },
      upstream: { model: 'text-embedding-3-small', deployment: 'embed-prod' },
    }),
});

describe('AzureProvider embeddings', () => {
  it('posts to the deployment’s embeddings URL with api-version and the api-key, and reads the vectors by index with the tokens', async () => {
    under.upstream.respond(azureEmbeddings());
    const inputs = ['one two', 'three', 'four five six'];
    const result = await under.embed({ ...textBatch(inputs, 8), user: 'user-9' });
    const sent = under.upstream.requests[0]!;
    expect(sent.path).toBe('/openai/deployments/embed-prod/embeddings?api-version=2024-10-21');
    expect(sent.headers['api-key']).toBe(PROVIDER_TEST_KEY);
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toEqual({ model: 'text-embedding-3-small', input: inputs, encoding_format: 'base64', dimensions: 8, user: 'user-9' });
    expect(valuesOf(result.vectors)).toEqual(inputs.map((text) => fakeVectorOf(text, 8)));
    expect(result.promptTokens).toBe(6);
  });

  it('posts to the v1 route with the model in the body when the catalog names no deployment, token ids as they are', async () => {
    under.upstream.respond(azureEmbeddings());
    const origin = new URL(under.upstream.baseUrl).origin;
    const v1 = { ...under.model, upstream: { model: 'embed-v1-prod', base_url: `${origin}/openai/v1`, api_key_env: PROVIDER_TEST_KEY_ENV } };
    const result = await under.provider.embeddings.embed({ texts: [], tokenArrays: [[1, 2, 3]], dimensions: 0, user: '' }, under.contextOf(undefined, v1));
    expect(under.upstream.requests[0]).toMatchObject({ path: '/openai/v1/embeddings', body: { model: 'embed-v1-prod', input: [[1, 2, 3]] } });
    expect(valuesOf(result.vectors)).toEqual([fakeVectorOf('1 2 3', 16)]);
    expect(azureUrl({ model: 'm', base_url: 'https://contoso.openai.azure.com/openai/', deployment: 'e 1', api_version: 'preview' }, 'embeddings').href).toBe(
      'https://contoso.openai.azure.com/openai/deployments/e%201/embeddings?api-version=preview',
    );
  });

  it('is refused by Azure with a wrong key (401) as the gateway configuration error it is, the key in no message', async () => {
    under.upstream.respond(azureEmbeddings('another-key-0123456789'));
    const refused = await gatewayErrorOf(under.embed(textBatch(['a'])));
    expect(refused).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', upstreamStatus: 401 });
    expect(refused.message).not.toContain(PROVIDER_TEST_KEY);
  });

  it('is refused without api-version on a deployment URL (404), not retried', async () => {
    under.upstream.respond(azureEmbeddings());
    const model = { ...under.model, upstream: { ...under.model.upstream, api_version: undefined } };
    const refused = await gatewayErrorOf(under.provider.embeddings.embed(textBatch(['a']), under.contextOf(undefined, model)));
    expect(refused).toMatchObject({ reason: 'upstream_rejected', upstreamStatus: 404, retryable: false });
  });
});

describe('AzureProvider embeddings with Microsoft Entra ID', () => {
  const application = { tenantId: 'c0ffee00-0000-4000-8000-000000000002', clientId: 'gateway-embed-client', clientSecret: 'entra-embed-secret-0123456789' };
  const CLIENT_ID_ENV = 'AZURE_TEST_EMBED_CLIENT_ID';
  let entra: FakeEntra;
  beforeAll(async () => {
    entra = await startFakeEntra(application);
  });
  afterAll(async () => {
    await entra.close();
  });

  it('sends a bearer token the Entra ID endpoint issued, which Azure accepts for embeddings', async () => {
    const provider = new AzureProvider({
      pools: (under.provider as unknown as { dependencies: { pools: never } }).dependencies.pools,
      environment: { [CLIENT_ID_ENV]: application.clientId },
      azureCredential: (clientId) =>
        new ClientSecretCredential(application.tenantId, clientId ?? '', application.clientSecret, {
          authorityHost: entra.authorityHost,
          disableInstanceDiscovery: true,
          tlsOptions: { ca: entra.caPem },
        }),
    });
    const model = { ...under.model, upstream: { ...under.model.upstream, api_key_env: CLIENT_ID_ENV, auth: 'entra_id' as const } };
    under.upstream.respond(azureOpenAi({ entra }, fakeOpenAiEmbeddings({ dimensions: 16 })));
    const result = await provider.embeddings.embed(textBatch(['with a token']), under.contextOf(undefined, model));
    expect(valuesOf(result.vectors)).toEqual([fakeVectorOf('with a token', 16)]);
    const sent = under.upstream.requests[0]!;
    expect(sent.headers['api-key']).toBeUndefined();
    expect(entra.verify(/^Bearer (.+)$/.exec(sent.headers.authorization ?? '')?.[1] ?? '')).toBe(true);
  });
});

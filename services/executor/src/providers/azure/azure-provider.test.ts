import { ClientSecretCredential } from '@azure/identity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_REASONS, GrpcStatus } from '@gateway/grpc';
import {
  azureOpenAi,
  replayJson,
  replaySse,
  startFakeEntra,
  type FakeEntra,
  type Responder,
  azureModel,
  PROVIDER_TEST_KEY,
  PROVIDER_TEST_KEY_ENV,
  providerFixture,
} from '@gateway/testing';
import { chunksOf, collect, gatewayErrorOf, simpleRequest, textOf } from '../../testing/provider-calls.js';
import { useProviderUnderTest } from '../../testing/provider-under-test.js';
import { UpstreamError } from '../upstream-error.js';
import { azureChatUrl, AzureProvider } from './azure-provider.js';
import { applicationCredentials } from './entra-credential.js';

const fixture = (name: string) => providerFixture('azure', name);
/** Azure's checks (route, api-version, api-key) in front of a reply. */
const azure = (reply: Responder): Responder => azureOpenAi({ apiKey: PROVIDER_TEST_KEY }, reply);
const TOOLS_REQUEST = simpleRequest({
  tools: [{ type: 'function', function: { name: 'get_current_weather', parameters_json: '{"type":"object","properties":{"location":{"type":"string"}}}' } }],
});

const under = useProviderUnderTest({
  create: (dependencies) => new AzureProvider(dependencies),
  modelOf: (baseUrl) => azureModel(new URL(baseUrl).origin),
});

describe('AzureProvider: URLs and the api-key', () => {
  it('posts to the deployment URL with api-version and the key in api-key, never as a bearer token', async () => {
    const response = await under.completeWith(azure(replayJson(200, fixture('chat-completion.json'))));
    const sent = under.upstream.requests[0]!;
    expect(sent.path).toBe('/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21');
    expect(sent.headers['api-key']).toBe(PROVIDER_TEST_KEY);
    expect(sent.headers.authorization).toBeUndefined();
    expect(sent.body).toMatchObject({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hello!' }] });
    expect(response).toMatchObject({
      model: 'azure/gpt-4o',
      choices: [{ finish_reason: 'FINISH_REASON_STOP', message: { content: 'Paris is the capital of France.' } }],
      usage: { prompt_tokens: 14, completion_tokens: 8, total_tokens: 22 },
    });
  });

  it('posts to the v1 route with the model in the body when the catalog names no deployment', async () => {
    const model = azureModel(new URL(under.upstream.baseUrl).origin, {});
    const v1 = {
      ...model,
      upstream: { model: 'gpt-4o-mini-prod', base_url: `${new URL(under.upstream.baseUrl).origin}/openai/v1/`, api_key_env: PROVIDER_TEST_KEY_ENV },
    };
    under.upstream.respond(azure(replayJson(200, fixture('chat-completion.json'))));
    await under.provider.complete(simpleRequest(), under.contextOf(undefined, v1));
    expect(under.upstream.requests[0]).toMatchObject({ path: '/openai/v1/chat/completions', body: { model: 'gpt-4o-mini-prod' } });
  });

  it('builds the URL from a resource endpoint written with or without /openai, and for Foundry', () => {
    const urls = [
      { base_url: 'https://contoso.openai.azure.com', deployment: 'gpt-4o', api_version: '2024-10-21' },
      { base_url: 'https://contoso.openai.azure.com/openai/', deployment: 'gpt 4o', api_version: '2025-04-01-preview' },
      { base_url: 'https://contoso.services.ai.azure.com/openai/v1' },
      { base_url: 'https://contoso.services.ai.azure.com', api_version: 'preview' },
    ].map((upstream) => azureChatUrl({ model: 'gpt-4o', ...upstream }).href);
    expect(urls).toEqual([
      'https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21',
      'https://contoso.openai.azure.com/openai/deployments/gpt%204o/chat/completions?api-version=2025-04-01-preview',
      'https://contoso.services.ai.azure.com/openai/v1/chat/completions',
      'https://contoso.services.ai.azure.com/openai/v1/chat/completions?api-version=preview',
    ]);
  });

  it('is refused by Azure without api-version on a deployment URL, as the gateway configuration error it is', async () => {
    const model = { ...under.model, upstream: { ...under.model.upstream, api_version: undefined } };
    under.upstream.respond(azure(replayJson(200, fixture('chat-completion.json'))));
    const failure = await gatewayErrorOf(under.provider.complete(simpleRequest(), under.contextOf(undefined, model)));
    expect(failure).toMatchObject({ reason: 'upstream_rejected', upstreamStatus: 404, retryable: false });
  });

  it('answers a wrong key as upstream_rejected, with the key kept out of the message', async () => {
    const wrongKey = azureOpenAi({ apiKey: 'another-key-0123456789' }, replayJson(200, fixture('chat-completion.json')));
    expect(await under.failureOf(wrongKey)).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', upstreamStatus: 401 });
    const echoing = replayJson(400, JSON.stringify({ error: { code: 'invalid_request', message: `Bad request sent with key ${PROVIDER_TEST_KEY}` } }));
    await under.expectKeyRedacted(echoing, PROVIDER_TEST_KEY);
  });
});

describe('AzureProvider: answers', () => {
  it('streams text, skipping the chunk that carries only prompt_filter_results, with the usage last', async () => {
    const events = await under.streamWith(azure(replaySse(fixture('stream-text.sse'))));
    expect(under.upstream.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    const chunks = chunksOf(events);
    expect(textOf(chunks)).toBe('Paris is the capital of France.');
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(events.at(-1)).toEqual({ type: 'usage', usage: expect.objectContaining({ prompt_tokens: 14, completion_tokens: 8, total_tokens: 22 }) });
  });

  it('calls tools, whole and streamed', async () => {
    const whole = await under.completeWith(azure(replayJson(200, fixture('chat-completion-tool-calls.json'))), TOOLS_REQUEST);
    expect(under.upstream.requests[0]?.body).toMatchObject({ tools: [{ type: 'function', function: { name: 'get_current_weather' } }] });
    expect(whole.choices?.[0]).toMatchObject({
      finish_reason: 'FINISH_REASON_TOOL_CALLS',
      message: { tool_calls: [{ id: 'call_Wx1Yz2', function: { name: 'get_current_weather', arguments: '{"location":"Paris","unit":"celsius"}' } }] },
    });
    const streamed = chunksOf(await under.streamWith(azure(replaySse(fixture('stream-tool-calls.sse'))), TOOLS_REQUEST));
    const calls = streamed.flatMap((chunk) => chunk.choices?.[0]?.delta?.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ id: 'call_Wx1Yz2', function: { name: 'get_current_weather' } });
    expect(calls.map((call) => call.function?.arguments ?? '').join('')).toBe('{"location":"Paris","unit":"celsius"}');
    expect(streamed.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
  });

  it('ends a completion the content filter withheld or cut with finish_reason content_filter, whole and streamed', async () => {
    const whole = await under.completeWith(azure(replayJson(200, fixture('chat-completion-content-filter.json'))));
    expect(whole.choices?.[0]?.finish_reason).toBe('FINISH_REASON_CONTENT_FILTER');
    const streamed = chunksOf(await under.streamWith(azure(replaySse(fixture('stream-content-filter.sse')))));
    expect(textOf(streamed)).toBe('Here is how');
    expect(streamed.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_CONTENT_FILTER');
  });
});

describe('AzureProvider: refusals', () => {
  it("answers a prompt the content filter refused with OpenAI's 400 content_filter on param prompt, not retried", async () => {
    const failure = await under.failureOf(azure(replayJson(400, fixture('error-400-content-filter.json'))));
    expect(failure).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'content_filter', param: 'prompt', retryable: false, upstreamStatus: 400 });
    expect(failure.message).toContain("triggering Azure OpenAI's content management policy");
    expect(ERROR_REASONS.content_filter).toMatchObject({ http: 400, type: 'invalid_request_error' });
  });

  it('takes the wait of a 429 from retry-after-ms, else from retry-after', async () => {
    const limited = (headers: Record<string, string>) => azure(replayJson(429, fixture('error-429.json'), headers));
    await under.expectRateLimited(limited({ 'retry-after-ms': '1500', 'retry-after': '2' }), 1500);
    await under.expectRateLimited(limited({ 'retry-after': '7' }), 7000, 'stream');
  });

  it('answers a deployment the resource does not have as upstream_rejected', async () => {
    expect(await under.failureOf(azure(replayJson(404, fixture('error-404-deployment.json'))))).toMatchObject({
      reason: 'upstream_rejected',
      upstreamStatus: 404,
    });
  });
});

describe('AzureProvider: Microsoft Entra ID', () => {
  const application = { tenantId: 'c0ffee00-0000-4000-8000-000000000001', clientId: 'gateway-client-id', clientSecret: 'entra-secret-0123456789' };
  const CLIENT_ID_ENV = 'AZURE_TEST_CLIENT_ID';
  let entra: FakeEntra;
  let provider: AzureProvider;
  let entraModel: typeof under.model;
  const credentialWith = (secret: string) => (clientId: string | undefined) =>
    new ClientSecretCredential(application.tenantId, clientId ?? '', secret, {
      authorityHost: entra.authorityHost,
      disableInstanceDiscovery: true,
      tlsOptions: { ca: entra.caPem },
    });

  beforeAll(async () => {
    entra = await startFakeEntra(application);
    provider = new AzureProvider({
      pools: (under.provider as unknown as { dependencies: { pools: never } }).dependencies.pools,
      environment: { [CLIENT_ID_ENV]: application.clientId },
      azureCredential: credentialWith(application.clientSecret),
    });
    entraModel = { ...under.model, upstream: { ...under.model.upstream, api_key_env: CLIENT_ID_ENV, auth: 'entra_id' } };
  });
  afterAll(async () => {
    await entra.close();
  });

  it('sends a bearer token the Entra ID endpoint issued for the client secret, and reuses it while it is valid', async () => {
    under.upstream.respond(azureOpenAi({ entra }, replayJson(200, fixture('chat-completion.json'))));
    const first = await provider.complete(simpleRequest(), under.contextOf(undefined, entraModel));
    expect(first.choices?.[0]?.message?.content).toBe('Paris is the capital of France.');
    under.upstream.respond(azureOpenAi({ entra }, replaySse(fixture('stream-text.sse'))));
    const events = await collect(provider.stream(simpleRequest(), under.contextOf(undefined, entraModel)));
    expect(events.at(-1)?.type).toBe('usage');
    const [whole, streamed] = under.upstream.requests;
    expect(whole?.headers['api-key']).toBeUndefined();
    expect(entra.verify(/^Bearer (.+)$/.exec(whole?.headers.authorization ?? '')?.[1] ?? '')).toBe(true);
    expect(streamed?.headers.authorization).toBe(whole?.headers.authorization);
    expect(entra.tokensIssued).toBe(1);
  });

  it('fails a call whose credential Entra ID refuses as the configuration error it is, without sending it upstream', async () => {
    const refused = new AzureProvider({
      pools: (under.provider as unknown as { dependencies: { pools: never } }).dependencies.pools,
      environment: { [CLIENT_ID_ENV]: application.clientId },
      azureCredential: credentialWith('wrong-secret-0123456789'),
    });
    const failure = await refused.complete(simpleRequest(), under.contextOf(undefined, entraModel)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure).toMatchObject({ status: 401, retryable: false, failureClass: 'unusable' });
    expect((failure as Error).message).not.toContain('wrong-secret');
    expect(under.upstream.requests).toHaveLength(0);
  });
});

describe('AzureProvider: an Entra ID application per deployment', () => {
  const contoso = {
    tenantId: 'c0ffee00-0000-4000-8000-00000000000a',
    clientId: '0a0a0a0a-0000-4000-8000-00000000000a',
    clientSecret: 'contoso-secret-0123456789',
  };
  const fabrikam = {
    tenantId: 'c0ffee00-0000-4000-8000-00000000000b',
    clientId: '0b0b0b0b-0000-4000-8000-00000000000b',
    clientSecret: 'fabrikam-secret-0123456789',
  };
  const environment = { CONTOSO_AZURE_SECRET: contoso.clientSecret, FABRIKAM_AZURE_SECRET: fabrikam.clientSecret };
  let entra: FakeEntra;
  let provider: AzureProvider;
  const deploymentOf = (application: typeof contoso, deployment: string, secretVariable: string): typeof under.model => ({
    ...under.model,
    upstream: {
      ...under.model.upstream,
      api_key_env: undefined,
      deployment,
      auth: 'entra_id',
      azure_credential: { client_id: application.clientId, tenant_id: application.tenantId, client_secret_env: secretVariable },
    },
  });

  beforeAll(async () => {
    entra = await startFakeEntra(contoso, fabrikam);
    provider = new AzureProvider({
      pools: (under.provider as unknown as { dependencies: { pools: never } }).dependencies.pools,
      environment,
      // The process's own chain must never be asked for a catalog-named application's token.
      azureCredential: () => {
        throw new Error('the process credential was used');
      },
      azureApplicationCredential: applicationCredentials({ authorityHost: entra.authorityHost, tlsOptions: { ca: entra.caPem } }),
    });
  });
  afterAll(async () => {
    await entra.close();
  });

  it("sends each deployment's requests with its own application's token, one token per application", async () => {
    under.upstream.respond(azureOpenAi({ entra }, replayJson(200, fixture('chat-completion.json'))));
    const inContoso = deploymentOf(contoso, 'gpt-4o-contoso', 'CONTOSO_AZURE_SECRET');
    const inFabrikam = deploymentOf(fabrikam, 'gpt-4o-fabrikam', 'FABRIKAM_AZURE_SECRET');
    for (const model of [inContoso, inFabrikam, inContoso, inFabrikam]) {
      const answer = await provider.complete(simpleRequest(), under.contextOf(undefined, model));
      expect(answer.choices?.[0]?.message?.content).toBe('Paris is the capital of France.');
    }
    const signedBy = under.upstream.requests.map((request) => [
      /\/deployments\/([^/]+)\//.exec(request.path)?.[1],
      entra.applicationOf(/^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? ''),
    ]);
    expect(signedBy).toEqual([
      ['gpt-4o-contoso', contoso.clientId],
      ['gpt-4o-fabrikam', fabrikam.clientId],
      ['gpt-4o-contoso', contoso.clientId],
      ['gpt-4o-fabrikam', fabrikam.clientId],
    ]);
    expect(entra.tokensIssued).toBe(2);
  });

  it('fails a deployment whose secret variable is not set as a configuration error, naming no secret and sending nothing', async () => {
    const unset = deploymentOf(fabrikam, 'gpt-4o-fabrikam', 'FABRIKAM_UNSET_SECRET');
    const failure = await provider.complete(simpleRequest(), under.contextOf(undefined, unset)).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect(failure).toMatchObject({ status: 401, retryable: false, failureClass: 'unusable' });
    expect(under.upstream.requests).toHaveLength(0);
  });
});

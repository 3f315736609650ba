/**
 * Azure OpenAI end to end, and one model served by two providers. The cluster's catalog points
 * Azure models at a fake Azure OpenAI (which checks the route, `api-version`, and the `api-key` or
 * a Microsoft Entra ID token that a fake Entra ID endpoint issued to the executor through
 * @azure/identity's credential chain: client secret in AZURE_* variables, AZURE_AUTHORITY_HOST at
 * the fake, its certificate trusted through NODE_EXTRA_CA_CERTS), driven by the official `openai`
 * client: answers whole and streamed, tools, the content filter's two refusals in OpenAI's shapes,
 * and a 429's wait. Then `gpt-4o-clouds`, served by an OpenAI-compatible upstream and by Azure at
 * Azure's higher price: the OpenAI upstream is taken down under load (it resets every new
 * connection, then stops listening), and the model keeps answering from Azure with no failed
 * request; each answer says which provider served it and is priced by that provider, in the
 * answer and in the latest requests, and /v1/usage sums both providers' prices to the pico-dollar.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { costPicoUsd, picoUsdToUsd } from '@gateway/catalog';
import {
  azureOpenAi,
  eventually,
  replayJson,
  replaySse,
  startFakeEntra,
  startFakeUpstream,
  type FakeEntra,
  type FakeUpstream,
  type Responder,
  fixture,
  providerFixture,
} from '@gateway/testing';
import { writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';
import { downable, DRILL_ADMIN_TOKEN, expectBilledByProvider, providerPrices, startLoad, takeDown, type ServedAnswer } from './provider-failover-drill.js';

const OPENAI_KEY_VARIABLE = 'FAKE_OPENAI_API_KEY';
const AZURE_KEY_VARIABLE = 'FAKE_AZURE_OPENAI_API_KEY';
const AZURE_KEY = 'azure-openai-key-0123456789abcdef';
const APPLICATION = { tenantId: 'c0ffee00-0000-4000-8000-00000000a2e1', clientId: 'gateway-executor-app', clientSecret: 'entra-client-secret-0123456789' };
/** GPT-4o at OpenAI's list price and at Azure OpenAI's Data Zone price (10% above Global). */
const PRICES = providerPrices({
  'openai-compatible': { input: '2.50', cached_input: '1.25', output: '10.00' },
  azure: { input: '2.75', cached_input: '1.375', output: '11.00' },
});

let entra: FakeEntra;
let azure: FakeUpstream;
let openai: FakeUpstream;
const gateway = new ClusterFixture();

function azureEntry(id: string, upstream: string): string {
  return `  - id: ${id}
    provider: azure
    owned_by: openai
    created: 1735689600
    upstream: ${upstream}
    pricing: ${PRICES.yaml('azure')}
    context_window: 128000
    max_output_tokens: 16384
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: premium`;
}

function catalogFile(): string {
  const azureOrigin = new URL(azure.baseUrl).origin;
  const deployment = (name: string) =>
    `{ model: gpt-4o, base_url: "${azureOrigin}", api_key_env: ${AZURE_KEY_VARIABLE}, deployment: ${name}, api_version: "2024-10-21" }`;
  return writeCatalog('azure-e2e', [
    azureEntry('azure-gpt-4o', deployment('gpt-4o-prod')),
    azureEntry('azure-gpt-4o-limited', deployment('gpt-4o-limited')),
    // Foundry's v1 route, authenticated by Entra ID: api_key_env names the client id variable.
    azureEntry('foundry-gpt-4o', `{ model: gpt-4o-foundry, base_url: "${azureOrigin}/openai/v1", api_key_env: AZURE_CLIENT_ID, auth: entra_id }`),
    `  - id: gpt-4o-clouds
    provider: openai-compatible
    owned_by: openai
    created: 1735689600
    upstream: { model: gpt-4o, base_url: "${openai.baseUrl}", api_key_env: ${OPENAI_KEY_VARIABLE} }
    pricing: ${PRICES.yaml('openai-compatible')}
    deployments:
      - { provider: azure, base_url: "${azureOrigin}", model: gpt-4o, deployment: gpt-4o-clouds, api_version: "2024-10-21", api_key_env: ${AZURE_KEY_VARIABLE}, pricing: ${PRICES.yaml('azure')} }
    context_window: 128000
    max_output_tokens: 16384
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: premium`,
  ]);
}

const azureFixture = (name: string) => providerFixture('azure', name);

/** The last user message's text of a request the fake received. */
function lastText(body: Record<string, unknown>): string {
  const messages = body.messages as Array<{ content?: unknown }>;
  return JSON.stringify(messages.at(-1)?.content ?? '');
}

/** Azure's answers, by what the request asks: a rate-limited deployment, a filtered prompt or answer, tools, or text. */
const azureAnswers: Responder = (request, response) => {
  const stream = request.body.stream === true;
  if (request.path.includes('/deployments/gpt-4o-limited/'))
    return replayJson(429, azureFixture('error-429.json'), { 'retry-after-ms': '2500', 'retry-after': '9' })(request, response);
  const text = lastText(request.body);
  if (text.includes('FILTER_PROMPT')) return replayJson(400, azureFixture('error-400-content-filter.json'))(request, response);
  if (text.includes('FILTER_ANSWER'))
    return (stream ? replaySse(azureFixture('stream-content-filter.sse')) : replayJson(200, azureFixture('chat-completion-content-filter.json')))(
      request,
      response,
    );
  if (Array.isArray(request.body.tools))
    return (stream ? replaySse(azureFixture('stream-tool-calls.sse')) : replayJson(200, azureFixture('chat-completion-tool-calls.json')))(request, response);
  return (stream ? replaySse(azureFixture('stream-text.sse')) : replayJson(200, azureFixture('chat-completion.json')))(request, response);
};

/** OpenAI's answers, until it is taken down: then every new request's connection is reset before any byte. */
const openaiAnswers = downable((request, response) =>
  (request.body.stream === true ? replaySse(fixture('stream-text.sse')) : replayJson(200, fixture('chat-completion.json')))(request, response),
);

const WEATHER_TOOL: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_current_weather', parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] } },
};
const hello = (text = 'What is the capital of France?') => [{ role: 'user' as const, content: text }];
type GatewayObject = { routed_to: string; provider?: string; cost_usd: number };
type Answer = OpenAI.ChatCompletion & { gateway: GatewayObject };

beforeAll(async () => {
  entra = await startFakeEntra(APPLICATION);
  azure = await startFakeUpstream(azureOpenAi({ apiKey: AZURE_KEY, entra }, azureAnswers));
  openai = await startFakeUpstream(openaiAnswers.responder);
  await gateway.start({
    env: {
      CATALOG_PATH: catalogFile(),
      [OPENAI_KEY_VARIABLE]: 'sk-openai-0123456789abcdef',
      [AZURE_KEY_VARIABLE]: AZURE_KEY,
      EDGE_ADMIN_TOKEN: DRILL_ADMIN_TOKEN,
      AZURE_TENANT_ID: APPLICATION.tenantId,
      AZURE_CLIENT_ID: APPLICATION.clientId,
      AZURE_CLIENT_SECRET: APPLICATION.clientSecret,
      AZURE_AUTHORITY_HOST: entra.authorityHost,
      NODE_EXTRA_CA_CERTS: entra.caFile,
      EXECUTOR_RETRY_BASE_DELAY_MS: '5',
      EXECUTOR_RETRY_MAX_DELAY_MS: '20',
    },
  });
});

afterAll(async () => {
  await gateway.stop(azure, openai, entra);
});

describe('an Azure OpenAI model through the gateway', () => {
  it('answers whole and streamed on its deployment URL with api-version and the api-key, saying azure served it', async () => {
    const whole = (await gateway.openai.chat.completions.create({ model: 'azure-gpt-4o', messages: hello() })) as Answer;
    expect(whole.choices[0]).toMatchObject({ finish_reason: 'stop', message: { content: 'Paris is the capital of France.' } });
    expect(whole.usage).toMatchObject({ prompt_tokens: 14, completion_tokens: 8, total_tokens: 22 });
    expect(whole.gateway).toMatchObject({ routed_to: 'azure-gpt-4o', provider: 'azure' });
    expect(whole.gateway.cost_usd).toBe(picoUsdToUsd(costPicoUsd(PRICES.pricing('azure'), { prompt_tokens: 14, completion_tokens: 8 })));
    const sent = azure.requests.at(-1)!;
    expect(sent.path).toBe('/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21');
    expect(sent.headers['api-key']).toBe(AZURE_KEY);

    let content = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await gateway.openai.chat.completions.create({
      model: 'azure-gpt-4o',
      messages: hello(),
      stream: true,
      stream_options: { include_usage: true },
    })) {
      content += chunk.choices[0]?.delta.content ?? '';
      usage = chunk.usage ?? usage;
    }
    expect(content).toBe('Paris is the capital of France.');
    expect(usage).toMatchObject({ prompt_tokens: 14, completion_tokens: 8 });
  });

  it('calls tools, whole and streamed', async () => {
    const whole = await gateway.openai.chat.completions.create({ model: 'azure-gpt-4o', messages: hello('Weather in Paris?'), tools: [WEATHER_TOOL] });
    expect(whole.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        tool_calls: [{ id: 'call_Wx1Yz2', type: 'function', function: { name: 'get_current_weather', arguments: '{"location":"Paris","unit":"celsius"}' } }],
      },
    });
    let argumentsText = '';
    let finish: string | null | undefined;
    for await (const chunk of await gateway.openai.chat.completions.create({
      model: 'azure-gpt-4o',
      messages: hello('Weather in Paris?'),
      tools: [WEATHER_TOOL],
      stream: true,
    })) {
      argumentsText += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(JSON.parse(argumentsText)).toEqual({ location: 'Paris', unit: 'celsius' });
    expect(finish).toBe('tool_calls');
  });

  it("answers the content filter's refusals in OpenAI's shapes: a filtered answer ends with content_filter, a filtered prompt is a 400", async () => {
    const withheld = await gateway.openai.chat.completions.create({ model: 'azure-gpt-4o', messages: hello('FILTER_ANSWER please') });
    expect(withheld.choices[0]?.finish_reason).toBe('content_filter');
    let streamedFinish: string | null | undefined;
    for await (const chunk of await gateway.openai.chat.completions.create({ model: 'azure-gpt-4o', messages: hello('FILTER_ANSWER please'), stream: true }))
      streamedFinish = chunk.choices[0]?.finish_reason ?? streamedFinish;
    expect(streamedFinish).toBe('content_filter');

    const refused = await gateway.openai.chat.completions.create({ model: 'azure-gpt-4o', messages: hello('FILTER_PROMPT please') }).then(
      () => undefined,
      (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
    );
    expect(refused).toMatchObject({ status: 400, code: 'content_filter', param: 'prompt', type: 'invalid_request_error' });
    expect(refused?.message).toContain("Azure OpenAI's content management policy");
  });

  it("turns Azure's 429 into the gateway's Retry-After, from retry-after-ms", async () => {
    const response = await fetch(`${gateway.cluster.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.cluster.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'azure-gpt-4o-limited', messages: hello() }),
    });
    const body = (await response.json()) as { error: { code: string } };
    expect([429, 503]).toContain(response.status);
    expect(['upstream_rate_limited', 'model_unavailable']).toContain(body.error.code);
    // Azure asked for 2.5 s in retry-after-ms (its retry-after says 9): the caller is told to wait
    // what is left of the 2.5 s, in whole seconds rounded up.
    expect([2, 3]).toContain(Number(response.headers.get('retry-after')));
  });

  it('authenticates with a Microsoft Entra ID token that the identity endpoint issued, on the v1 route, and reuses it', async () => {
    const whole = (await gateway.openai.chat.completions.create({ model: 'foundry-gpt-4o', messages: hello() })) as Answer;
    expect(whole.choices[0]?.message.content).toBe('Paris is the capital of France.');
    let content = '';
    for await (const chunk of await gateway.openai.chat.completions.create({ model: 'foundry-gpt-4o', messages: hello(), stream: true }))
      content += chunk.choices[0]?.delta.content ?? '';
    expect(content).toBe('Paris is the capital of France.');
    const sent = azure.requests.filter((request) => request.path === '/openai/v1/chat/completions');
    expect(sent).toHaveLength(2);
    for (const request of sent) {
      expect(request.body.model).toBe('gpt-4o-foundry');
      expect(request.headers['api-key']).toBeUndefined();
      expect(entra.verify(/^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '')).toBe(true);
    }
    // The library caches the token: one token for both requests.
    expect(entra.tokensIssued).toBe(1);
  });
});

describe('one model served by two providers', () => {
  it('keeps answering from Azure with no failed request when the OpenAI upstream is taken down under load, each answer priced by its provider', async () => {
    const ask = async (turn: number): Promise<ServedAnswer> => {
      const requestId = `clouds-${randomUUID()}`;
      const startedAt = performance.now();
      const options = { headers: { 'x-request-id': requestId } };
      if (turn % 2 === 0) {
        const answer = (await gateway.openai.chat.completions.create({ model: 'gpt-4o-clouds', messages: hello() }, options)) as Answer;
        return {
          requestId,
          startedAt,
          provider: answer.gateway.provider ?? 'none',
          usage: { ...answer.usage!, cached_tokens: answer.usage?.prompt_tokens_details?.cached_tokens ?? 0 },
          costUsd: answer.gateway.cost_usd,
        };
      }
      let reported: GatewayObject | undefined;
      let usage: OpenAI.CompletionUsage | undefined;
      const chunks = await gateway.openai.chat.completions.create(
        { model: 'gpt-4o-clouds', messages: hello(), stream: true, stream_options: { include_usage: true } },
        options,
      );
      for await (const chunk of chunks) {
        usage = chunk.usage ?? usage;
        reported = (chunk as unknown as { gateway?: GatewayObject }).gateway ?? reported;
      }
      return {
        requestId,
        startedAt,
        provider: reported?.provider ?? 'none',
        usage: {
          prompt_tokens: usage?.prompt_tokens ?? 0,
          completion_tokens: usage?.completion_tokens ?? 0,
          cached_tokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
        },
        costUsd: reported?.cost_usd ?? Number.NaN,
      };
    };
    const load = startLoad(4, ask);

    // Both providers serve while both are up.
    await eventually(() => load.servedBy('openai-compatible') >= 8 && load.servedBy('azure') >= 3, 'both providers to answer under load', 30_000, 50);
    // OpenAI goes down: new connections are reset, answers already running finish, then nothing listens.
    const downAt = await takeDown({ ...openaiAnswers, close: () => openai.close() }, 'OpenAI');
    await eventually(() => load.askedSince(downAt) >= 40, '40 answers asked for once OpenAI is down', 60_000, 50);
    await load.stop();

    expect(load.failures).toEqual([]);
    expect(load.servedBy('openai-compatible', downAt)).toBe(0);
    expect(load.servedBy('azure', downAt)).toBe(load.askedSince(downAt));
    // Each answer is priced by its provider; the latest requests say which provider served each
    // one and what it cost; /v1/usage sums them.
    await expectBilledByProvider({ cluster: gateway.cluster, model: 'gpt-4o-clouds', load, pricing: PRICES.pricing });
  });
});

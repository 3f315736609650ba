/**
 * The coding agents' APIs on every kind of upstream: OpenAI's Responses API (the `openai` client)
 * and Anthropic's Messages API (`@anthropic-ai/sdk`), whole and streamed, each on a model behind a
 * fake OpenAI-compatible, Anthropic and Gemini upstream replaying that provider's published wire
 * format (the executor's fixtures). Each answer must say what the chat completion of the same
 * upstream answer says: the same text, the same token counts, the same cost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { replayJson, replaySse, startFakeUpstream, type FakeUpstream, type Responder, providerFixture } from '@gateway/testing';
import { streamedChat } from './chat-stream.js';
import { writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';

const KEY_VARIABLE = 'FAKE_PROVIDER_API_KEY';

/** Each provider's catalog entry and the fixtures its fake upstream answers with. */
const PROVIDERS = {
  'openai-compatible': { model: 'gpt-4o-mini', whole: 'chat-completion.json', stream: 'stream-text.sse' },
  anthropic: { model: 'claude-sonnet-4-20250514', whole: 'message.json', stream: 'stream-text.sse' },
  gemini: { model: 'gemini-2.5-pro', whole: 'generate-content.json', stream: 'stream-text.sse' },
} as const;
type Provider = keyof typeof PROVIDERS;

let upstream: FakeUpstream;
const gateway = new ClusterFixture();

function catalogFile(baseUrl: string): string {
  const entries = (Object.keys(PROVIDERS) as Provider[]).map(
    (provider) => `  - id: fake-${provider}
    provider: ${provider}
    owned_by: tests
    created: 1735689600
    upstream: { model: ${PROVIDERS[provider].model}, base_url: "${provider === 'openai-compatible' ? baseUrl : new URL(baseUrl).origin}", api_key_env: ${KEY_VARIABLE} }
    pricing: { input: "3.00", cached_input: "0.30", output: "15.00" }
    context_window: 200000
    max_output_tokens: 8192
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: premium`,
  );
  return writeCatalog('agent-apis-providers', entries);
}

/** The provider's fixture, whole or streamed as the gateway asked for it. */
function replaying(provider: Provider): Responder {
  const fixtures = PROVIDERS[provider];
  return (request, response) => {
    const body = request.body as { stream?: boolean } | undefined;
    const streamed = body?.stream === true || request.path.includes('streamGenerateContent');
    return streamed
      ? replaySse(providerFixture(provider, fixtures.stream))(request, response)
      : replayJson(200, providerFixture(provider, fixtures.whole))(request, response);
  };
}

/** What the chat completion of the same upstream answer says: the reference. */
async function chatReference(model: string, stream: boolean) {
  if (!stream) {
    const completion = await gateway.openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello' }] });
    return {
      text: completion.choices[0]!.message.content ?? '',
      usage: completion.usage!,
      cost: (completion as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd,
    };
  }
  const { text, usage } = await streamedChat(gateway.openai, model);
  return { text, usage: usage!, cost: undefined };
}

beforeAll(async () => {
  upstream = await startFakeUpstream(replaying('openai-compatible'));
  await gateway.start({ env: { CATALOG_PATH: catalogFile(upstream.baseUrl), [KEY_VARIABLE]: 'sk-fake-provider-0123456789abcdef' } });
});

afterAll(async () => {
  await gateway.stop(upstream);
});

describe('GET /v1/models through Anthropic’s client', () => {
  it('lists the catalog as Anthropic’s model objects, and reads one', async () => {
    const ids: string[] = [];
    for await (const model of gateway.anthropic.models.list({ limit: 2 })) ids.push(model.id);
    expect(ids).toEqual((Object.keys(PROVIDERS) as Provider[]).map((provider) => `fake-${provider}`));
    expect(await gateway.anthropic.models.retrieve('fake-anthropic')).toMatchObject({ type: 'model', id: 'fake-anthropic', display_name: 'fake-anthropic' });
    await expect(gateway.anthropic.models.retrieve('nope')).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe.each(Object.keys(PROVIDERS) as Provider[])('a model behind a fake %s upstream', (provider) => {
  const model = `fake-${provider}`;

  it('answers the Responses API whole and streamed with the chat completion’s text, tokens and cost', async () => {
    upstream.respond(replaying(provider));
    const whole = await chatReference(model, false);
    const response = await gateway.openai.responses.create({ model, input: 'Hello' });
    expect(response.status).toBe('completed');
    expect(response.output_text).toBe(whole.text);
    expect(whole.text.length).toBeGreaterThan(0);
    expect(response.usage).toMatchObject({ input_tokens: whole.usage.prompt_tokens, output_tokens: whole.usage.completion_tokens });
    expect((response as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd).toBe(whole.cost);

    const streamed = await chatReference(model, true);
    const stream = gateway.openai.responses.stream({ model, input: 'Hello' });
    let deltas = '';
    for await (const event of stream) if (event.type === 'response.output_text.delta') deltas += event.delta;
    const final = await stream.finalResponse();
    expect(deltas).toBe(streamed.text);
    expect(final.output_text).toBe(streamed.text);
    expect(final.usage).toMatchObject({ input_tokens: streamed.usage.prompt_tokens, output_tokens: streamed.usage.completion_tokens });
  });

  it('answers the Messages API whole and streamed with the chat completion’s text and tokens', async () => {
    upstream.respond(replaying(provider));
    const whole = await chatReference(model, false);
    const message = await gateway.anthropic.messages.create({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] });
    expect(message.type).toBe('message');
    expect(message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).toBe(whole.text);
    const details = whole.usage.prompt_tokens_details as { cached_tokens?: number; cache_write_tokens?: number } | undefined;
    const [read, written] = [details?.cached_tokens ?? 0, details?.cache_write_tokens ?? 0];
    // Anthropic's input_tokens leave out the tokens read from and written to the cache.
    expect(message.usage).toMatchObject({
      input_tokens: whole.usage.prompt_tokens - read - written,
      output_tokens: whole.usage.completion_tokens,
      cache_read_input_tokens: read,
      cache_creation_input_tokens: written,
    });
    expect((message as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd).toBe(whole.cost);

    const streamed = await chatReference(model, true);
    const stream = gateway.anthropic.messages.stream({ model, max_tokens: 256, messages: [{ role: 'user', content: 'Hello' }] });
    let deltas = '';
    stream.on('text', (text) => {
      deltas += text;
    });
    const final = await stream.finalMessage();
    expect(deltas).toBe(streamed.text);
    expect(final.usage.output_tokens).toBe(streamed.usage.completion_tokens);
  });
});

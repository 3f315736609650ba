/**
 * The anthropic and gemini adapters end to end: the cluster with a catalog whose Claude and Gemini
 * models point at a fake upstream in this process (replaying each provider's fixtures), driven by
 * the official `openai` client. What a user notices: the answer, tool calls whose streamed
 * arguments reassemble, cached prompt tokens in the usage, a cache-aware cost, and the provider's
 * own 400 message. Also log probabilities: an OpenAI model's reach the caller exactly as OpenAI
 * sent them, whole and streamed; Claude and Gemini answer a request for them with `logprobs: null`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { costPicoUsd, picoUsdToUsd, usdPerMtokToMicro } from '@gateway/catalog';
import { replayJson, replaySse, startFakeUpstream, type FakeUpstream, type Responder } from '@gateway/testing';
import { fixture, providerFixture } from '../../services/executor/src/testing/fixtures.js';
import { fakeModelEntry, SIM_MINI_ENTRY, startCluster, writeCatalog, type Cluster } from './cluster.js';
import { hostileBodies, sendHostileBodies } from './hostile-bodies.js';

const KEY_VARIABLE = 'FAKE_PROVIDER_API_KEY';
const KEY = 'sk-fake-provider-0123456789abcdef';
const PRICES = { input: '3.00', cached_input: '0.30', output: '15.00' };

let upstream: FakeUpstream;
let cluster: Cluster;
let client: OpenAI;

function catalogFile(baseUrl: string): string {
  const origin = new URL(baseUrl).origin;
  const common = `    pricing: { input: "${PRICES.input}", cached_input: "${PRICES.cached_input}", output: "${PRICES.output}" }
    context_window: 200000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: premium`;
  return writeCatalog('providers-e2e', [
    SIM_MINI_ENTRY,
    fakeModelEntry(baseUrl, KEY_VARIABLE),
    `  - id: fake-claude
    provider: anthropic
    owned_by: tests
    created: 1735689600
    upstream: { model: claude-sonnet-4-20250514, base_url: "${origin}", api_key_env: ${KEY_VARIABLE} }
    max_output_tokens: 64000
${common}`,
    `  - id: fake-gemini
    provider: gemini
    owned_by: tests
    created: 1735689600
    upstream: { model: gemini-2.5-pro, base_url: "${origin}", api_key_env: ${KEY_VARIABLE} }
    max_output_tokens: 65536
${common}`,
  ]);
}

/** The cost the gateway must report for a usage at PRICES, cached tokens at the cached price. */
function expectedCost(usage: { prompt_tokens: number; completion_tokens: number; cached_tokens: number }): number {
  const pricing = {
    input_micro_usd_per_mtok: usdPerMtokToMicro(PRICES.input),
    cached_input_micro_usd_per_mtok: usdPerMtokToMicro(PRICES.cached_input),
    output_micro_usd_per_mtok: usdPerMtokToMicro(PRICES.output),
  };
  return picoUsdToUsd(costPicoUsd(pricing, usage));
}

/** Answers by path: the provider's stream or whole fixture. */
function byProvider(anthropic: Responder, gemini: Responder): Responder {
  return (request, response) => (request.path.startsWith('/v1/messages') ? anthropic(request, response) : gemini(request, response));
}

beforeAll(async () => {
  upstream = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
  cluster = await startCluster({ env: { CATALOG_PATH: catalogFile(upstream.baseUrl), [KEY_VARIABLE]: KEY } });
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await cluster?.stop();
  await upstream?.close();
});

describe('an anthropic model through the gateway', () => {
  it('answers a whole completion with cached prompt tokens and a cache-aware cost', async () => {
    upstream.respond(replayJson(200, providerFixture('anthropic', 'message.json')));
    const completion = await client.chat.completions.create({
      model: 'fake-claude',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Who are you?' },
      ],
    });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.choices[0]?.message.content).toBe('Hi! My name is Claude. How can I help you today?');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage).toMatchObject({ prompt_tokens: 2160, completion_tokens: 15, prompt_tokens_details: { cached_tokens: 2048 } });
    const cost = (completion as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd;
    expect(cost).toBe(expectedCost({ prompt_tokens: 2160, completion_tokens: 15, cached_tokens: 2048 }));
    expect(cost).toBeLessThan(expectedCost({ prompt_tokens: 2160, completion_tokens: 15, cached_tokens: 0 }));
    const sent = upstream.requests.at(-1);
    expect(sent?.headers['x-api-key']).toBe(KEY);
    expect(sent?.body).toMatchObject({
      model: 'claude-sonnet-4-20250514',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Who are you?' }],
      max_tokens: 64000,
    });
  });

  it('streams tool calls whose argument fragments reassemble, then the usage', async () => {
    upstream.respond(replaySse(providerFixture('anthropic', 'stream-tool-use.sse')));
    const stream = await client.chat.completions.create({
      model: 'fake-claude',
      messages: [{ role: 'user', content: 'Weather and time in San Francisco?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const calls = new Map<number, { id?: string; name?: string; arguments: string }>();
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        const call = calls.get(delta.index) ?? { arguments: '' };
        call.id ??= delta.id;
        call.name ??= delta.function?.name;
        call.arguments += delta.function?.arguments ?? '';
        calls.set(delta.index, call);
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect([...calls.values()].map((call) => [call.id, call.name, JSON.parse(call.arguments)])).toEqual([
      ['toolu_01T1x1fJ34qAmk2tNTrN7Up6', 'get_weather', { location: 'San Francisco, CA', unit: 'fahrenheit' }],
      ['toolu_01CkHLUc9Hk7vDbJYL3Z2xNv', 'get_time', { timezone: 'America/Los_Angeles' }],
      ['toolu_01NRLabsLyVHZPKxbKvkfSMn', 'list_alerts', {}],
    ]);
    expect(finish).toBe('tool_calls');
    expect(usage).toMatchObject({ prompt_tokens: 472, completion_tokens: 89 });
  });

  it("gives the caller the provider's 400 message", async () => {
    upstream.respond(replayJson(400, providerFixture('anthropic', 'error-400.json')));
    const failure = await client.chat.completions.create({ model: 'fake-claude', messages: [{ role: 'user', content: 'Hi' }] }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
    expect((failure as Error).message).toContain('roles must alternate');
  });
});

describe('a gemini model through the gateway', () => {
  it('answers a whole completion with cached and reasoning tokens', async () => {
    upstream.respond(byProvider(replayJson(500, '{}'), replayJson(200, providerFixture('gemini', 'generate-content.json'))));
    const completion = await client.chat.completions.create({ model: 'fake-gemini', messages: [{ role: 'user', content: 'Hello' }] });
    expect(completion.choices[0]?.message.content).toBe('Hello! How can I help you today?');
    expect(completion.usage).toMatchObject({
      prompt_tokens: 2061,
      completion_tokens: 39,
      prompt_tokens_details: { cached_tokens: 2048 },
      completion_tokens_details: { reasoning_tokens: 30 },
    });
    expect((completion as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd).toBe(
      expectedCost({ prompt_tokens: 2061, completion_tokens: 39, cached_tokens: 2048 }),
    );
    const sent = upstream.requests.at(-1);
    expect(sent?.path).toBe('/v1beta/models/gemini-2.5-pro:generateContent');
    expect(sent?.headers['x-goog-api-key']).toBe(KEY);
  });

  it('streams whole function calls as tool-call deltas with their arguments', async () => {
    upstream.respond(replaySse(providerFixture('gemini', 'stream-function-call.sse')));
    const stream = await client.chat.completions.create({
      model: 'fake-gemini',
      messages: [{ role: 'user', content: 'Weather and time in Boston?' }],
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } }, additionalProperties: false } },
        },
      ],
      stream: true,
    });
    const calls: Array<{ id?: string; name?: string; arguments?: string }> = [];
    let content = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      content += chunk.choices[0]?.delta.content ?? '';
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? [])
        calls[delta.index] = { id: delta.id, name: delta.function?.name, arguments: delta.function?.arguments };
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(content).toBe('Let me look that up.');
    expect(calls.map((call) => [call.name, JSON.parse(call.arguments ?? '')])).toEqual([
      ['get_weather', { location: 'Boston, MA', unit: 'celsius' }],
      ['get_time', { timezone: 'America/New_York' }],
    ]);
    expect(calls.every((call) => call.id?.startsWith('call_'))).toBe(true);
    expect(finish).toBe('tool_calls');
    expect(upstream.requests.at(-1)?.body).toMatchObject({
      tools: [{ functionDeclarations: [{ name: 'get_weather', parameters: { type: 'OBJECT', properties: { location: { type: 'STRING' } } } }] }],
    });
  });
});

describe('log probabilities through each adapter', () => {
  const question = [{ role: 'user' as const, content: 'Hello!' }];

  it("gives an OpenAI model's logprobs exactly as the upstream sent them, whole and streamed", async () => {
    const published = JSON.parse(fixture('chat-completion-logprobs.json')) as { choices: Array<{ logprobs: unknown }> };
    upstream.respond(replayJson(200, fixture('chat-completion-logprobs.json')));
    const completion = await client.chat.completions.create({ model: 'fake-model', messages: question, logprobs: true, top_logprobs: 2 });
    expect(upstream.requests.at(-1)?.body).toMatchObject({ logprobs: true, top_logprobs: 2 });
    expect(completion.choices[0]?.logprobs).toEqual(published.choices[0]?.logprobs);
    // The special token without a byte representation keeps `bytes: null`.
    expect(completion.choices[0]?.logprobs?.content?.[2]?.top_logprobs[1]).toEqual({ token: '<|end|>', logprob: -10.953937, bytes: null });

    const sent = fixture('stream-logprobs.sse')
      .split('\n\n')
      .filter((event) => event.startsWith('data: {'))
      .map((event) => JSON.parse(event.slice('data: '.length)) as { choices: Array<{ logprobs: unknown }> })
      .filter((chunk) => chunk.choices.length > 0);
    upstream.respond(replaySse(fixture('stream-logprobs.sse')));
    const stream = await client.chat.completions.create({ model: 'fake-model', messages: question, logprobs: true, top_logprobs: 2, stream: true });
    const received: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) received.push(chunk);
    expect(received.map((chunk) => chunk.choices[0]?.logprobs)).toEqual(sent.map((chunk) => chunk.choices[0]?.logprobs));
  });

  it('answers a request for logprobs from Claude and Gemini normally, with logprobs null', async () => {
    upstream.respond(
      byProvider(replayJson(200, providerFixture('anthropic', 'message.json')), replayJson(200, providerFixture('gemini', 'generate-content.json'))),
    );
    for (const model of ['fake-claude', 'fake-gemini']) {
      const completion = await client.chat.completions.create({ model, messages: question, logprobs: true, top_logprobs: 3 });
      expect(completion.choices[0]?.message.content).toBeTruthy();
      expect(completion.choices[0]?.logprobs).toBeNull();
    }
    upstream.respond(byProvider(replaySse(providerFixture('anthropic', 'stream-text.sse')), replaySse(providerFixture('gemini', 'stream-text.sse'))));
    for (const model of ['fake-claude', 'fake-gemini']) {
      const stream = await client.chat.completions.create({ model, messages: question, logprobs: true, stream: true });
      let content = '';
      for await (const chunk of stream) {
        content += chunk.choices[0]?.delta.content ?? '';
        expect(chunk.choices[0]?.logprobs ?? null).toBeNull();
      }
      expect(content).toBe('Hello! How can I help?');
    }
  });
});

describe('hostile bodies for the anthropic and gemini adapters', () => {
  it('are refused with 400s in the OpenAI envelope or answered, never a 5xx, whatever the conversion meets', async () => {
    upstream.respond((request, response) => {
      const stream = request.body.stream === true || request.path.includes('streamGenerateContent');
      if (request.path.startsWith('/v1/messages'))
        return (stream ? replaySse(providerFixture('anthropic', 'stream-text.sse')) : replayJson(200, providerFixture('anthropic', 'message.json')))(
          request,
          response,
        );
      return (stream ? replaySse(providerFixture('gemini', 'stream-text.sse')) : replayJson(200, providerFixture('gemini', 'generate-content.json')))(
        request,
        response,
      );
    });
    const post = (body: string) =>
      fetch(`${cluster.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
        body,
      });
    const statuses = await sendHostileBodies([...hostileBodies(400, ['fake-claude', 'fake-gemini'], 4242)], post);
    expect(statuses.get(400)).toBeGreaterThan(50);
    // Some get through validation to the adapters and the fake upstreams, and are answered.
    expect(statuses.get(200)).toBeGreaterThan(0);
  });
});

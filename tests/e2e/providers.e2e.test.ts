/**
 * The anthropic and gemini adapters end to end: the cluster with a catalog whose Claude and Gemini
 * models point at a fake upstream in this process (replaying each provider's fixtures), driven by
 * the official `openai` client. What a user notices: the answer, tool calls whose streamed
 * arguments reassemble, cached prompt tokens in the usage, a cache-aware cost, and the provider's
 * own 400 message; a cached three-turn Claude session (cache_control forwarded, cache reads and
 * 5-minute and 1-hour writes) billed to the pico-dollar, in the answers and in /v1/usage, the
 * same session shaped like Claude Code's through the Messages API (`@anthropic-ai/sdk`: every
 * breakpoint on its upstream block, Anthropic's usage) and through the Responses API (no
 * breakpoints in OpenAI's shape, the same cache reads and writes priced). Also log probabilities: an OpenAI model's reach the caller exactly as OpenAI
 * sent them, whole and streamed; Claude and Gemini answer a request for them with `logprobs: null`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { costPicoUsd, picoUsdToUsd, usdPerMtokToMicro } from '@gateway/catalog';
import { replayJson, replaySse, startFakeUpstream, type FakeUpstream, type Responder, fixture, providerFixture } from '@gateway/testing';
import { fakeModelEntry, SIM_MINI_ENTRY, writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';
import { hostileBodies, sendHostileBodies } from './hostile-bodies.js';

const KEY_VARIABLE = 'FAKE_PROVIDER_API_KEY';
const KEY = 'sk-fake-provider-0123456789abcdef';
const PRICES = { input: '3.00', cached_input: '0.30', output: '15.00' };

/** The cached Claude model, once per API the cached session goes through. */
const CACHED_CLAUDE_MODELS = ['fake-claude-cached', 'fake-claude-cached-messages', 'fake-claude-cached-responses'] as const;

let upstream: FakeUpstream;
const gateway = new ClusterFixture();

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
    // Anthropic's published rates for claude-sonnet-4: writes 1.25x (5m) and 2x (1h), reads 0.1x;
    // one model per API so each session is metered on its own row.
    ...CACHED_CLAUDE_MODELS.map(
      (id) => `  - id: ${id}
    provider: anthropic
    owned_by: tests
    created: 1735689600
    upstream: { model: claude-sonnet-4-20250514, base_url: "${origin}", api_key_env: ${KEY_VARIABLE} }
    max_output_tokens: 64000
    pricing: { input: "3.00", cached_input: "0.30", cache_write: "3.75", cache_write_1h: "6.00", output: "15.00" }
    context_window: 200000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: false }
    quality_tier: premium`,
    ),
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
  await gateway.start({ env: { CATALOG_PATH: catalogFile(upstream.baseUrl), [KEY_VARIABLE]: KEY } });
});

afterAll(async () => {
  await gateway.stop(upstream);
});

describe('an anthropic model through the gateway', () => {
  it('answers a whole completion with cached prompt tokens and a cache-aware cost', async () => {
    upstream.respond(replayJson(200, providerFixture('anthropic', 'message.json')));
    const completion = await gateway.openai.chat.completions.create({
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
    const stream = await gateway.openai.chat.completions.create({
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
    const failure = await gateway.openai.chat.completions.create({ model: 'fake-claude', messages: [{ role: 'user', content: 'Hi' }] }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
    expect((failure as Error).message).toContain('roles must alternate');
  });
});

describe('a cached Claude session through the gateway', () => {
  const costOf = (completion: object) => (completion as { gateway: { cost_usd: number } }).gateway.cost_usd;
  const manual = 'The operations manual, long enough to be worth caching.';

  it('forwards cache_control and bills three turns of cache reads and 5-minute and 1-hour writes to the pico-dollar', async () => {
    const system = { role: 'system' as const, content: [{ type: 'text' as const, text: manual, cache_control: { type: 'ephemeral', ttl: '1h' } }] };
    // Turn 1: 10,000 plain, 50,000 written for 5 minutes, 8,000 for an hour, 120,000 read, 2,000 out:
    // 10,000 x 3 + 50,000 x 3.75 + 8,000 x 6 + 120,000 x 0.30 + 2,000 x 15 micro-USD = $0.3315.
    upstream.respond(replayJson(200, providerFixture('anthropic', 'message-cache-write.json')));
    const first = await gateway.openai.chat.completions.create({
      model: 'fake-claude-cached',
      messages: [system, { role: 'user', content: 'Summarize it.' }],
    } as never);
    expect(first.usage).toMatchObject({
      prompt_tokens: 188_000,
      completion_tokens: 2_000,
      prompt_tokens_details: { cached_tokens: 120_000, cache_write_tokens: 58_000 },
    });
    expect(costOf(first)).toBe(0.3315);
    expect(upstream.requests.at(-1)?.body).toMatchObject({
      system: [{ type: 'text', text: manual, cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: 'Summarize it.' }],
    });

    // Turn 2: 12 plain, 100 written (no split: 5 minutes), 2,048 read, 15 out:
    // 12 x 3 + 100 x 3.75 + 2,048 x 0.30 + 15 x 15 micro-USD = 1,250.4 micro-USD.
    upstream.respond(replayJson(200, providerFixture('anthropic', 'message.json')));
    const turn2Messages = [
      system,
      { role: 'user', content: 'Summarize it.' },
      { role: 'assistant', content: 'The document describes a gateway.' },
      { role: 'user', content: [{ type: 'text', text: 'And the second chapter?', cache_control: { type: 'ephemeral' } }] },
    ];
    const second = await gateway.openai.chat.completions.create({ model: 'fake-claude-cached', messages: turn2Messages } as never);
    expect(costOf(second)).toBe(0.0012504);
    expect((upstream.requests.at(-1)!.body as { messages: unknown[] }).messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'And the second chapter?', cache_control: { type: 'ephemeral' } }],
    });

    // Turn 3, streamed: 40 plain, 1,000 written for 5 minutes, 2,000 for an hour, 4,096 read, 6 out:
    // 40 x 3 + 1,000 x 3.75 + 2,000 x 6 + 4,096 x 0.30 + 6 x 15 micro-USD = 17,188.8 micro-USD.
    upstream.respond(replaySse(providerFixture('anthropic', 'stream-cache-write.sse')));
    const stream = await gateway.openai.chat.completions.create({
      model: 'fake-claude-cached',
      messages: [...turn2Messages, { role: 'assistant', content: 'It covers routing.' }, { role: 'user', content: 'Thanks.' }],
      stream: true,
      stream_options: { include_usage: true },
    } as never);
    let last: object = {};
    for await (const chunk of stream as unknown as AsyncIterable<object>) last = chunk;
    expect((last as { usage: object }).usage).toMatchObject({
      prompt_tokens: 7_136,
      prompt_tokens_details: { cached_tokens: 4_096, cache_write_tokens: 3_000 },
    });
    expect(costOf(last)).toBe(0.0171888);

    // Metered alike: $0.3315 + $0.0012504 + $0.0171888 = 349,939,200,000 pico-USD.
    expect(await gateway.usageRow('fake-claude-cached', 3)).toMatchObject(SESSION_METERED);
  });
});

/**
 * Claude Code's request shape: three system blocks (a billing header, the identity and the long
 * manual), the last two with breakpoints, a breakpoint on the last tool and on the last user block.
 */
const CLAUDE_CODE_SYSTEM = [
  { type: 'text' as const, text: 'x-anthropic-billing-header: cc_version=2.0.0' },
  { type: 'text' as const, text: 'You are Claude Code.', cache_control: { type: 'ephemeral' as const } },
  { type: 'text' as const, text: 'The operations manual, long enough to be worth caching.', cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } },
];
const CLAUDE_CODE_TOOLS: Anthropic.Tool[] = [
  { name: 'Read', description: 'Read a file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
  {
    name: 'Bash',
    description: 'Run a command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } } },
    cache_control: { type: 'ephemeral' },
  },
];

/** The three turns' usage and bill, the same through every API (the same upstream answers). */
const SESSION_METERED = {
  requests: 3,
  prompt_tokens: 188_000 + 2_160 + 7_136,
  completion_tokens: 2_000 + 15 + 6,
  cached_tokens: 120_000 + 2_048 + 4_096,
  cache_write_tokens: 58_000 + 100 + 3_000,
  // $0.3315 + $0.0012504 + $0.0171888 (the turns' costs worked out above).
  cost_pico_usd: '349939200000',
};

describe('a cached Claude Code session through the Messages API', () => {
  const model = 'fake-claude-cached-messages';
  const gatewayOf = (value: object) => (value as { gateway: { cost_usd: number } }).gateway;
  const userTurn = (text: string): Anthropic.MessageParam => ({ role: 'user', content: [{ type: 'text', text, cache_control: { type: 'ephemeral' } }] });

  it('forwards every breakpoint to its upstream block and reports and bills the cache reads and writes to the pico-dollar', async () => {
    upstream.respond(replayJson(200, providerFixture('anthropic', 'message-cache-write.json')));
    const turn1 = [userTurn('Summarize it.')];
    const first = await gateway.anthropic.messages.create({ model, max_tokens: 4096, system: CLAUDE_CODE_SYSTEM, tools: CLAUDE_CODE_TOOLS, messages: turn1 });
    // Anthropic's input_tokens is the plain input alone, apart from cache reads and writes.
    expect(first.usage).toMatchObject({ input_tokens: 10_000, output_tokens: 2_000, cache_creation_input_tokens: 58_000, cache_read_input_tokens: 120_000 });
    expect(gatewayOf(first).cost_usd).toBe(0.3315);
    expect(upstream.requests.at(-1)?.body).toMatchObject({
      system: CLAUDE_CODE_SYSTEM,
      tools: [{ name: 'Read' }, { name: 'Bash', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarize it.', cache_control: { type: 'ephemeral' } }] }],
    });
    expect((upstream.requests.at(-1)!.body as { tools: object[] }).tools[0]).not.toHaveProperty('cache_control');

    upstream.respond(replayJson(200, providerFixture('anthropic', 'message.json')));
    const turn2 = [...turn1, { role: 'assistant' as const, content: 'The document describes a gateway.' }, userTurn('And the second chapter?')];
    const second = await gateway.anthropic.messages.create({ model, max_tokens: 4096, system: CLAUDE_CODE_SYSTEM, tools: CLAUDE_CODE_TOOLS, messages: turn2 });
    expect(second.usage).toMatchObject({ input_tokens: 12, output_tokens: 15, cache_creation_input_tokens: 100, cache_read_input_tokens: 2_048 });
    expect(gatewayOf(second).cost_usd).toBe(0.0012504);
    expect((upstream.requests.at(-1)!.body as { messages: unknown[] }).messages.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'And the second chapter?', cache_control: { type: 'ephemeral' } }],
    });

    upstream.respond(replaySse(providerFixture('anthropic', 'stream-cache-write.sse')));
    const turn3 = [...turn2, { role: 'assistant' as const, content: 'It covers routing.' }, userTurn('Thanks.')];
    const stream = gateway.anthropic.messages.stream({ model, max_tokens: 4096, system: CLAUDE_CODE_SYSTEM, tools: CLAUDE_CODE_TOOLS, messages: turn3 });
    const deltas: Anthropic.MessageDeltaEvent[] = [];
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_delta') deltas.push(event);
    });
    const third = await stream.finalMessage();
    expect(deltas).toHaveLength(1);
    expect(deltas[0]!.usage).toMatchObject({ input_tokens: 40, output_tokens: 6, cache_creation_input_tokens: 3_000, cache_read_input_tokens: 4_096 });
    expect(third.usage).toMatchObject({ input_tokens: 40, output_tokens: 6, cache_creation_input_tokens: 3_000, cache_read_input_tokens: 4_096 });
    expect(gatewayOf(deltas[0]!).cost_usd).toBe(0.0171888);
    expect(upstream.requests.at(-1)?.body).toMatchObject({ system: CLAUDE_CODE_SYSTEM, stream: true });

    expect(await gateway.usageRow(model, 3)).toMatchObject(SESSION_METERED);
  });

  it("refuses an invalid cache_control with a 400 in Anthropic's envelope naming the Messages field", async () => {
    const sent = upstream.requests.length;
    const response = await fetch(`${gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': gateway.cluster.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        max_tokens: 64,
        system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral', ttl: '10m' } }],
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', message: "Invalid value for 'system[0].cache_control.ttl': supported values are '5m' and '1h'." },
    });
    expect(upstream.requests.length).toBe(sent);
  });
});

describe('a cached Claude session through the Responses API', () => {
  const model = 'fake-claude-cached-responses';
  const gatewayOf = (value: object) => (value as { gateway: { cost_usd: number } }).gateway;
  const instructions = 'The operations manual, long enough to be worth caching.';

  it("reports the upstream's cache reads as cached tokens and bills the reads and writes to the pico-dollar", async () => {
    upstream.respond(replayJson(200, providerFixture('anthropic', 'message-cache-write.json')));
    const turn1: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'Summarize it.' }];
    const first = await gateway.openai.responses.create({ model, instructions, input: turn1 });
    expect(first.usage).toMatchObject({ input_tokens: 188_000, output_tokens: 2_000, input_tokens_details: { cached_tokens: 120_000 } });
    expect(gatewayOf(first).cost_usd).toBe(0.3315);
    // OpenAI's shape has no breakpoints: the instructions go up as plain text.
    expect(upstream.requests.at(-1)?.body).toMatchObject({ system: instructions, messages: [{ role: 'user', content: 'Summarize it.' }] });

    upstream.respond(replayJson(200, providerFixture('anthropic', 'message.json')));
    const turn2: OpenAI.Responses.ResponseInputItem[] = [
      ...turn1,
      { role: 'assistant', content: 'The document describes a gateway.' },
      { role: 'user', content: 'And the second chapter?' },
    ];
    const second = await gateway.openai.responses.create({ model, instructions, input: turn2 });
    expect(second.usage).toMatchObject({ input_tokens: 2_160, output_tokens: 15, input_tokens_details: { cached_tokens: 2_048 } });
    expect(gatewayOf(second).cost_usd).toBe(0.0012504);

    upstream.respond(replaySse(providerFixture('anthropic', 'stream-cache-write.sse')));
    const turn3: OpenAI.Responses.ResponseInputItem[] = [...turn2, { role: 'assistant', content: 'It covers routing.' }, { role: 'user', content: 'Thanks.' }];
    const third = await gateway.openai.responses.stream({ model, instructions, input: turn3 }).finalResponse();
    expect(third.usage).toMatchObject({ input_tokens: 7_136, output_tokens: 6, input_tokens_details: { cached_tokens: 4_096 } });
    expect(gatewayOf(third).cost_usd).toBe(0.0171888);

    expect(await gateway.usageRow(model, 3)).toMatchObject(SESSION_METERED);
  });
});

describe('a gemini model through the gateway', () => {
  it('answers a whole completion with cached and reasoning tokens', async () => {
    upstream.respond(byProvider(replayJson(500, '{}'), replayJson(200, providerFixture('gemini', 'generate-content.json'))));
    const completion = await gateway.openai.chat.completions.create({ model: 'fake-gemini', messages: [{ role: 'user', content: 'Hello' }] });
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
    const stream = await gateway.openai.chat.completions.create({
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
    const completion = await gateway.openai.chat.completions.create({ model: 'fake-model', messages: question, logprobs: true, top_logprobs: 2 });
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
    const stream = await gateway.openai.chat.completions.create({ model: 'fake-model', messages: question, logprobs: true, top_logprobs: 2, stream: true });
    const received: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) received.push(chunk);
    expect(received.map((chunk) => chunk.choices[0]?.logprobs)).toEqual(sent.map((chunk) => chunk.choices[0]?.logprobs));
  });

  it('answers a request for logprobs from Claude and Gemini normally, with logprobs null', async () => {
    upstream.respond(
      byProvider(replayJson(200, providerFixture('anthropic', 'message.json')), replayJson(200, providerFixture('gemini', 'generate-content.json'))),
    );
    for (const model of ['fake-claude', 'fake-gemini']) {
      const completion = await gateway.openai.chat.completions.create({ model, messages: question, logprobs: true, top_logprobs: 3 });
      expect(completion.choices[0]?.message.content).toBeTruthy();
      expect(completion.choices[0]?.logprobs).toBeNull();
    }
    upstream.respond(byProvider(replaySse(providerFixture('anthropic', 'stream-text.sse')), replaySse(providerFixture('gemini', 'stream-text.sse'))));
    for (const model of ['fake-claude', 'fake-gemini']) {
      const stream = await gateway.openai.chat.completions.create({ model, messages: question, logprobs: true, stream: true });
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
      fetch(`${gateway.cluster.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${gateway.cluster.apiKey}`, 'content-type': 'application/json' },
        body,
      });
    const statuses = await sendHostileBodies([...hostileBodies(400, ['fake-claude', 'fake-gemini'], 4242)], post);
    expect(statuses.get(400)).toBeGreaterThan(50);
    // Some get through validation to the adapters and the fake upstreams, and are answered.
    expect(statuses.get(200)).toBeGreaterThan(0);
  });
});

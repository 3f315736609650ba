/**
 * Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) through the running
 * cluster, driven by the official `@anthropic-ai/sdk` client the way its users and Claude Code call
 * it: whole and streamed messages, a tool_use / tool_result round trip, token counts, a body shaped
 * like Claude Code's, keys from `x-api-key` or a bearer token, refusals in Anthropic's envelope,
 * and the usage metered for the key. The simulated model answers the same conversation the same
 * way on any API, so the chat completion of the same messages is the reference.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { eventually } from '@gateway/testing';
import { startCluster, type Cluster } from './cluster.js';
import { createKey, type CreatedKey } from './admin-keys.js';
import { referenceAnswer } from './reference-answer.js';

const CATALOG = new URL('./fixtures/conformance-catalog.yaml', import.meta.url).pathname;
const ADMIN_TOKEN = 'admin-token-for-the-messages-tests-0123456789';
const MODEL = 'sim-full';
const SYSTEM = 'You are a concise assistant.';
const QUESTION = 'Tell me about rivers.';
const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string', description: 'The city' } }, required: ['city'] },
};

let cluster: Cluster;
let client: Anthropic;
let origin: string;

/** A key of its own, made through the admin API. */
function createPlanKey(plan: 'starter' | 'pro', fields: Record<string, unknown> = {}): Promise<CreatedKey> {
  return createKey(origin, ADMIN_TOKEN, { plan, name: `messages ${plan}`, ...fields });
}

/** POST a raw body to a Messages path (fields the SDK's types do not know, malformed ones). */
function post(body: unknown, { path = '/v1/messages', headers = {} }: { path?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  return fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'x-api-key': cluster.apiKey, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The events of a Messages stream's body; each block's `event:` line names its data's type. */
function parseEvents(text: string): Array<{ type: string } & Record<string, unknown>> {
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => {
      const [eventLine, dataLine] = block.split('\n');
      const event = JSON.parse(dataLine!.slice('data: '.length)) as { type: string } & Record<string, unknown>;
      expect(eventLine).toBe(`event: ${event.type}`);
      return event;
    });
}

beforeAll(async () => {
  cluster = await startCluster({ env: { CATALOG_PATH: CATALOG, EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  origin = cluster.baseUrl.replace(/\/v1$/, '');
  client = new Anthropic({ baseURL: origin, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await cluster?.stop();
});

/** The chat completion of the same conversation: what the Messages answer must say. */
function reference() {
  return referenceAnswer(new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 }), MODEL, SYSTEM, QUESTION);
}

function textOf(message: Anthropic.Message): string {
  return message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
}

describe('POST /v1/messages with the official client', () => {
  it('creates a whole message: the same text and usage as the chat completion, with the gateway object', async () => {
    const expected = await reference();
    const message = await client.messages.create({ model: MODEL, max_tokens: 1024, system: SYSTEM, messages: [{ role: 'user', content: QUESTION }] });
    expect(message.id).toMatch(/^msg_/);
    expect(message).toMatchObject({ type: 'message', role: 'assistant', model: MODEL, stop_reason: 'end_turn', stop_sequence: null });
    expect(textOf(message)).toBe(expected.text);
    expect(message.usage).toMatchObject({
      input_tokens: expected.usage.prompt_tokens,
      output_tokens: expected.usage.completion_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    expect((message as unknown as { gateway: Record<string, unknown> }).gateway).toMatchObject({ routed_to: MODEL });
  });

  it('streams the published events in order, and a final message with usage', async () => {
    const expected = await reference();
    const stream = client.messages.stream({ model: MODEL, max_tokens: 1024, system: SYSTEM, messages: [{ role: 'user', content: QUESTION }] });
    const types: string[] = [];
    let deltas = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') deltas += event.delta.text;
    }
    const final = await stream.finalMessage();
    const withoutPings = types.filter((type) => type !== 'ping');
    expect(withoutPings.slice(0, 2)).toEqual(['message_start', 'content_block_start']);
    expect(withoutPings.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(withoutPings.filter((type) => type === 'content_block_delta').length).toBeGreaterThan(1);
    expect(deltas).toBe(expected.text);
    expect(textOf(final)).toBe(expected.text);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage).toMatchObject({ input_tokens: expected.usage.prompt_tokens, output_tokens: expected.usage.completion_tokens });
  });

  it('stops at max_tokens with stop_reason max_tokens', async () => {
    const message = await client.messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: QUESTION }] });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(16);
  });

  it('calls a tool, and answers its tool_result in a second request, whole and streamed', async () => {
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'What is the weather in Oslo? Use get_weather.' }];
    const first = await client.messages.create({ model: MODEL, max_tokens: 1024, messages, tools: [weatherTool] });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((block) => block.type === 'tool_use');
    if (use?.type !== 'tool_use') throw new Error(`no tool_use in ${JSON.stringify(first.content)}`);
    expect(use).toMatchObject({ name: 'get_weather', input: { city: expect.any(String) } });
    expect(use.id).toBeTruthy();

    const streamed = await client.messages.stream({ model: MODEL, max_tokens: 1024, messages, tools: [weatherTool] }).finalMessage();
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.content.find((block) => block.type === 'tool_use')).toMatchObject({ name: 'get_weather', input: { city: expect.any(String) } });

    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 1024,
      tools: [weatherTool],
      messages: [
        ...messages,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: '3 degrees, cloudy' }] }] },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    expect(textOf(second)).toBeTruthy();
    expect(second.content.some((block) => block.type === 'tool_use')).toBe(false);
  });

  it('counts tokens: the prompt tokens the same message is metered with, without max_tokens', async () => {
    const expected = await reference();
    const counted = await client.messages.countTokens({ model: MODEL, system: SYSTEM, messages: [{ role: 'user', content: QUESTION }] });
    expect(counted).toEqual({ input_tokens: expected.usage.prompt_tokens });
    const withTools = await client.messages.countTokens({
      model: MODEL,
      system: SYSTEM,
      messages: [{ role: 'user', content: QUESTION }],
      tools: [weatherTool],
    });
    expect(withTools.input_tokens).toBeGreaterThan(counted.input_tokens);
  });

  it("answers a body shaped like Claude Code's with 200 and a complete stream", async () => {
    const response = await post(
      {
        model: MODEL,
        max_tokens: 32_000,
        stream: true,
        temperature: 1,
        system: [
          { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude.", cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'You are an interactive CLI tool that helps users with software engineering tasks.', cache_control: { type: 'ephemeral' } },
        ],
        messages: [
          { role: 'system', content: 'The user works in /work/project.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>Use the tools available.</system-reminder>' },
              { type: 'text', text: QUESTION, cache_control: { type: 'ephemeral' } },
            ],
          },
        ],
        tools: [
          { ...weatherTool, cache_control: { type: 'ephemeral' } },
          {
            name: 'Bash',
            description: 'Runs a shell command',
            input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
          },
          { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
        ],
        tool_choice: { type: 'auto' },
        thinking: { type: 'adaptive' },
        metadata: { user_id: 'user_0123_account__session_4567' },
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
        output_config: { effort: 'high' },
        some_future_field: { enabled: true },
      },
      {
        path: '/v1/messages?beta=true',
        headers: {
          'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,an-unknown-beta-2099-01-01',
          'anthropic-dangerous-direct-browser-access': 'true',
          'x-app': 'cli',
        },
      },
    );
    expect(response.status, await response.clone().text()).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseEvents(await response.text());
    expect(events[0]).toMatchObject({ type: 'message_start', message: { role: 'assistant', model: MODEL } });
    expect(events.at(-2)).toMatchObject({ type: 'message_delta', usage: { output_tokens: expect.any(Number) } });
    expect(events.at(-1)).toEqual({ type: 'message_stop' });
  });

  it('accepts the key as x-api-key and as a bearer token (ANTHROPIC_AUTH_TOKEN), through the beta client too', async () => {
    const bearer = new Anthropic({ baseURL: origin, apiKey: null, authToken: cluster.apiKey, maxRetries: 0 });
    const message = await bearer.messages.create({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] });
    expect(message.type).toBe('message');
    const beta = await client.beta.messages.create({
      model: MODEL,
      max_tokens: 64,
      messages: [{ role: 'user', content: QUESTION }],
      betas: ['claude-code-20250219', 'an-unknown-beta-2099-01-01'],
    });
    expect(beta.type).toBe('message');
  });
});

describe("refusals in Anthropic's envelope", () => {
  it('401 for a bad or missing key: AuthenticationError', async () => {
    const bad = new Anthropic({ baseURL: origin, apiKey: 'br-not-a-real-key', maxRetries: 0 });
    const error = await bad.messages
      .create({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    const raw = await post(
      { model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] },
      { headers: { 'x-api-key': 'br-not-a-real-key' } },
    );
    expect(raw.status).toBe(401);
    expect(await raw.json()).toEqual({ type: 'error', error: { type: 'authentication_error', message: expect.any(String) } });
    const none = await fetch(`${origin}/v1/messages/count_tokens`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({
      type: 'error',
      error: {
        type: 'authentication_error',
        message: "You didn't provide an API key. Send it in an x-api-key header, or in an Authorization header using Bearer auth.",
      },
    });
  });

  it('400 for a malformed body, invalid JSON and a wrong content type: BadRequestError', async () => {
    const error = await client.messages.create({ model: MODEL, messages: [{ role: 'user', content: QUESTION }] } as never).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).error).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: "Missing required parameter: 'max_tokens'." },
    });
    const invalidJson = await post('{"model": ');
    expect(invalidJson.status).toBe(400);
    expect(await invalidJson.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const text = await post('hello', { headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    const unknownModel = await post({ model: 'no-such-model', max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] });
    expect(unknownModel.status).toBe(404);
    expect(await unknownModel.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const method = await fetch(`${origin}/v1/messages`, { headers: { 'x-api-key': cluster.apiKey } });
    expect(method.status).toBe(405);
    expect(await method.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('429 over the requests per minute: RateLimitError with retry-after; a token count uses none of them', async () => {
    const limited = await createPlanKey('pro', { limits: { requests_per_minute: 1 } });
    const own = new Anthropic({ baseURL: origin, apiKey: limited.secret, maxRetries: 0 });
    const body: Anthropic.MessageCreateParamsNonStreaming = { model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: QUESTION }] };
    await own.messages.countTokens({ model: MODEL, messages: body.messages });
    await own.messages.countTokens({ model: MODEL, messages: body.messages });
    expect((await own.messages.create(body)).type).toBe('message');
    const error = await own.messages.create(body).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const rateLimited = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(rateLimited.error).toEqual({ type: 'error', error: { type: 'rate_limit_error', message: expect.any(String) } });
    expect(Number(rateLimited.headers?.get('retry-after'))).toBeGreaterThan(0);
  });

  it("lowers Claude Code's max_tokens ceiling to what the model can produce rather than refusing it", async () => {
    const message = await client.messages.stream({ model: MODEL, max_tokens: 32_000, messages: [{ role: 'user', content: QUESTION }] }).finalMessage();
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    // `auto` chooses among every model able to answer, then fits the ceiling to the chosen one.
    const routed = await client.messages
      .stream({ model: 'auto', max_tokens: 32_000, messages: [{ role: 'user', content: QUESTION }], tools: [weatherTool] })
      .finalMessage();
    expect(routed.stop_reason).toBe('end_turn');
    expect(['sim-full', 'vendor/family/sim-slashed']).toContain(routed.model);
  });

  it('answers a failure before the first byte with its status, and ends a stream that fails later with an error event', async () => {
    const early = await post({ model: MODEL, max_tokens: 1024, stream: true, messages: [{ role: 'user', content: `${QUESTION} [[simulate:error=503]]` }] });
    expect(early.status).toBeGreaterThanOrEqual(500);
    expect(await early.json()).toEqual({
      type: 'error',
      error: { type: expect.stringMatching(/^(api_error|overloaded_error)$/), message: expect.any(String) },
    });

    const response = await post({
      model: MODEL,
      max_tokens: 1024,
      stream: true,
      messages: [{ role: 'user', content: `${QUESTION} [[simulate:fail_after=3]]` }],
    });
    expect(response.status).toBe(200);
    const events = parseEvents(await response.text());
    expect(events.map((event) => event.type)).toContain('content_block_delta');
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      error: { type: expect.stringMatching(/^(api_error|overloaded_error)$/), message: expect.any(String) },
    });
    expect(events.some((event) => event.type === 'message_stop')).toBe(false);
  });
});

describe('metering', () => {
  it("meters Messages requests as the key's usage, whole and streamed; a token count is not a request", async () => {
    const key = await createPlanKey('pro');
    const own = new Anthropic({ baseURL: origin, apiKey: key.secret, maxRetries: 0 });
    const since = Math.floor(Date.now() / 1000) - 3_600;
    const whole = await own.messages.create({ model: MODEL, max_tokens: 1024, messages: [{ role: 'user', content: QUESTION }] });
    const streamed = await own.messages
      .stream({ model: MODEL, max_tokens: 1024, messages: [{ role: 'user', content: 'Tell me about lakes.' }] })
      .finalMessage();
    await own.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: QUESTION }] });
    const input = whole.usage.input_tokens + streamed.usage.input_tokens;
    const output = whole.usage.output_tokens + streamed.usage.output_tokens;
    const totals = await eventually(
      async () => {
        const response = await fetch(`${cluster.baseUrl}/usage?start=${since}&bucket=hour`, { headers: { authorization: `Bearer ${key.secret}` } });
        const page = (await response.json()) as { totals: { requests: number; prompt_tokens: number; completion_tokens: number } };
        return page.totals.requests >= 2 ? page.totals : undefined;
      },
      'both requests to be metered',
      30_000,
      200,
    );
    expect(totals).toMatchObject({ requests: 2, prompt_tokens: input, completion_tokens: output });
  });
});

/**
 * OpenAI's Responses API (POST /v1/responses) through the running cluster, driven by the official
 * `openai` client the way its users and Codex call it: whole and streamed responses, a function
 * call round trip, a body shaped like Codex's, the same refusals as chat completions in OpenAI's
 * envelope, and the usage metered for the key. The simulated model answers the same conversation
 * the same way on either API, so the chat completion of the same messages is the reference.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { eventually } from '@gateway/testing';
import { startCluster, type Cluster } from './cluster.js';
import { createKey, type CreatedKey } from './admin-keys.js';
import { referenceAnswer } from './reference-answer.js';

const CATALOG = new URL('./fixtures/conformance-catalog.yaml', import.meta.url).pathname;
/** A body shaped like Codex's (0.169): developer and user messages, function, namespace and web_search tools, its hints. */
const CODEX_BODY: unknown = JSON.parse(readFileSync(new URL('../../services/edge/src/wire/fixtures/codex-request.json', import.meta.url), 'utf8'));
const ADMIN_TOKEN = 'admin-token-for-the-responses-tests-0123456789';
const MODEL = 'sim-full';
const INSTRUCTIONS = 'You are a concise assistant.';
const QUESTION = 'Tell me about rivers.';
const weatherParameters = {
  type: 'object',
  properties: { city: { type: 'string', description: 'The city' } },
  required: ['city'],
  additionalProperties: false,
};

let cluster: Cluster;
let client: OpenAI;
let origin: string;

/** A key of its own, made through the admin API. */
function createPlanKey(plan: 'starter' | 'pro'): Promise<CreatedKey> {
  return createKey(origin, ADMIN_TOKEN, { plan, name: `responses ${plan}` });
}

/** POST /v1/responses with a raw body (fields the SDK's types do not know, malformed ones). */
function post(body: unknown, key = cluster.apiKey): Promise<Response> {
  return fetch(`${cluster.baseUrl}/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The events of a Responses stream's body. */
function parseEvents(text: string): Array<{ type: string; sequence_number: number } & Record<string, unknown>> {
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('event: '))
    .map((block) => JSON.parse(block.split('\n')[1]!.slice('data: '.length)));
}

beforeAll(async () => {
  cluster = await startCluster({ env: { CATALOG_PATH: CATALOG, EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
  origin = cluster.baseUrl.replace(/\/v1$/, '');
});

afterAll(async () => {
  await cluster?.stop();
});

/** The chat completion of the same conversation: what the Responses answer must say. */
function reference() {
  return referenceAnswer(client, MODEL, INSTRUCTIONS, QUESTION);
}

describe('POST /v1/responses with the official client', () => {
  it('creates a whole response: the same text and usage as the chat completion, with the gateway object', async () => {
    const expected = await reference();
    // `store: true` is answered as usual (and stored: responses-store.e2e.test.ts).
    const response = await client.responses.create({ model: MODEL, instructions: INSTRUCTIONS, input: QUESTION, store: true });
    expect(response.id).toMatch(/^resp_/);
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: MODEL, instructions: INSTRUCTIONS, error: null });
    expect(response.output_text).toBe(expected.text);
    expect(response.output).toEqual([expect.objectContaining({ type: 'message', role: 'assistant', status: 'completed' })]);
    expect(response.usage).toMatchObject({
      input_tokens: expected.usage.prompt_tokens,
      output_tokens: expected.usage.completion_tokens,
      total_tokens: expected.usage.total_tokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    });
    expect((response as unknown as { gateway: Record<string, unknown> }).gateway).toMatchObject({ routed_to: MODEL });
  });

  it('streams the published events in order, numbered, and a final response with usage', async () => {
    const expected = await reference();
    const stream = client.responses.stream({ model: MODEL, instructions: INSTRUCTIONS, input: QUESTION });
    const events: Array<{ type: string; sequence_number: number }> = [];
    let deltas = '';
    for await (const event of stream) {
      events.push(event);
      if (event.type === 'response.output_text.delta') deltas += event.delta;
    }
    const final = await stream.finalResponse();
    const types = events.map((event) => event.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed']);
    expect(types.filter((type) => type === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    expect(deltas).toBe(expected.text);
    expect(final.output_text).toBe(expected.text);
    expect(final.usage).toMatchObject({ input_tokens: expected.usage.prompt_tokens, output_tokens: expected.usage.completion_tokens });
  });

  it('streams with create({ stream: true }), with no [DONE] at the end', async () => {
    const stream = await client.responses.create({ model: MODEL, input: QUESTION, stream: true });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    const raw = await (await post({ model: MODEL, input: QUESTION, stream: true })).text();
    expect(raw).not.toContain('[DONE]');
    expect(raw.trimEnd().split('\n\n').at(-1)).toMatch(/^event: response\.completed\ndata: /);
  });

  it('stops at max_output_tokens as an incomplete response', async () => {
    const response = await client.responses.create({ model: MODEL, input: QUESTION, max_output_tokens: 16 });
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(response.usage?.output_tokens).toBe(16);
  });

  it('calls a function, and answers its output in a second request', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      { type: 'function', name: 'get_weather', description: 'Current weather for a city', parameters: weatherParameters, strict: true },
    ];
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'What is the weather in Oslo? Use get_weather.' }];
    const first = await client.responses.create({ model: MODEL, input, tools });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ type: 'function_call', name: 'get_weather', status: 'completed' });
    if (call?.type !== 'function_call') throw new Error('no function call');
    expect(call.call_id).toBeTruthy();
    expect(JSON.parse(call.arguments)).toEqual({ city: expect.any(String) });

    const second = await client.responses.create({
      model: MODEL,
      tools,
      input: [
        ...input,
        ...first.output,
        { type: 'function_call_output', call_id: call.call_id, output: '{"temperature":3}' },
      ] as OpenAI.Responses.ResponseInput,
    });
    expect(second.status).toBe('completed');
    expect(second.output_text).toBeTruthy();
    expect(second.output.some((item) => item.type === 'function_call')).toBe(false);
  });

  it('calls a custom tool with a raw input, and answers its output', async () => {
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'custom',
        name: 'apply_patch',
        description: 'Applies a patch to the files',
        format: { type: 'grammar', syntax: 'lark', definition: 'start: /(.|\\n)+/' },
      },
    ];
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: 'Fix the typo. Use apply_patch.' }];
    const first = await client.responses.create({ model: MODEL, input, tools });
    const call = first.output.find((item) => item.type === 'custom_tool_call');
    if (call?.type !== 'custom_tool_call') throw new Error(`no custom tool call in ${JSON.stringify(first.output)}`);
    expect(call).toMatchObject({ name: 'apply_patch', call_id: expect.any(String), input: expect.any(String) });
    const second = await client.responses.create({
      model: MODEL,
      tools,
      input: [...input, ...first.output, { type: 'custom_tool_call_output', call_id: call.call_id, output: 'Done.' }] as OpenAI.Responses.ResponseInput,
    });
    expect(second.status).toBe('completed');
    expect(second.output_text).toBeTruthy();
  });

  it('streams a call of a namespace function, named back by its namespace', async () => {
    const events = parseEvents(
      await (
        await post({
          model: MODEL,
          stream: true,
          input: 'Give me the forecast for Oslo.',
          tools: [
            {
              type: 'namespace',
              name: 'weather',
              description: 'Weather',
              tools: [{ type: 'function', name: 'get_forecast', description: 'Forecast for a city', parameters: weatherParameters }],
            },
          ],
        })
      ).text(),
    );
    const types = events.map((event) => event.type);
    expect(types).toContain('response.function_call_arguments.delta');
    expect(events.find((event) => event.type === 'response.output_item.added')).toMatchObject({
      item: { type: 'function_call', name: 'get_forecast', namespace: 'weather' },
    });
    expect(events.find((event) => event.type === 'response.function_call_arguments.done')).toMatchObject({ name: 'get_forecast' });
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { output: [{ type: 'function_call', namespace: 'weather' }] } });
  });

  it("answers a body shaped like Codex's with 200 and a completed stream", async () => {
    const response = await post(CODEX_BODY);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = parseEvents(await response.text());
    expect(events[0]?.type).toBe('response.created');
    expect(events.at(-1)).toMatchObject({
      type: 'response.completed',
      response: { status: 'completed', store: false, usage: { input_tokens: expect.any(Number) } },
    });
  });
});

describe('routing and failures, as for chat completions', () => {
  it('routes `auto` to a model able to call the offered tools', async () => {
    const response = await client.responses.create({
      model: 'auto',
      input: QUESTION,
      tools: [{ type: 'function', name: 'get_weather', description: 'Current weather for a city', parameters: weatherParameters, strict: true }],
    });
    const gateway = (response as unknown as { gateway: { routed_to: string; auto?: unknown } }).gateway;
    expect(['sim-full', 'vendor/family/sim-slashed']).toContain(gateway.routed_to);
    expect(response.model).toBe(gateway.routed_to);
    expect(gateway.auto).toBeDefined();
  });

  it('answers a failure before the first byte with its status, and ends a stream that fails later with response.failed', async () => {
    const early = await post({ model: MODEL, input: `${QUESTION} [[simulate:error=503]]`, stream: true });
    expect(early.status).toBeGreaterThanOrEqual(500);
    expect(((await early.json()) as { error: { code: string } }).error.code).toBeTruthy();

    const late = await post({ model: MODEL, input: `${QUESTION} [[simulate:fail_after=3]]`, stream: true });
    expect(late.status).toBe(200);
    const events = parseEvents(await late.text());
    expect(events.map((event) => event.type)).toContain('response.output_text.delta');
    expect(events.at(-1)).toMatchObject({
      type: 'response.failed',
      response: { status: 'failed', error: { code: expect.any(String), message: expect.any(String) } },
    });
    expect(events.some((event) => event.type === 'response.completed')).toBe(false);
  });
});

describe("refusals, as for chat completions, in OpenAI's envelope", () => {
  it('401 for a bad key', async () => {
    const bad = new OpenAI({ baseURL: cluster.baseUrl, apiKey: 'br-not-a-real-key', maxRetries: 0 });
    const error = await bad.responses.create({ model: MODEL, input: QUESTION }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    const raw = await post({ model: MODEL, input: QUESTION }, 'br-not-a-real-key');
    expect(raw.status).toBe(401);
    const body = (await raw.json()) as { error: Record<string, unknown> };
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    // The same error as chat completions answers the same key with.
    const chat = await fetch(`${cluster.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer br-not-a-real-key', 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: QUESTION }] }),
    });
    expect(chat.status).toBe(401);
    expect(body).toEqual(await chat.json());
    expect(body.error.code).toBeTruthy();
  });

  it('400 naming the field, for a malformed body and for previous_response_id', async () => {
    const error = await client.responses
      .create({ model: MODEL, input: [{ role: 'user', content: [{ type: 'input_video' }] }] } as never)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input[0].content[0].type');
    const missing = await post({ model: MODEL });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({
      error: { message: "Missing required parameter: 'input'.", type: 'invalid_request_error', param: 'input', code: 'missing_required_parameter' },
    });
    const previous = await post({ model: MODEL, input: QUESTION, previous_response_id: 'resp_123' });
    expect(previous.status).toBe(400);
    expect(await previous.json()).toMatchObject({ error: { code: 'previous_response_not_found', param: 'previous_response_id' } });
    const unknown = await post({ model: 'no-such-model', input: QUESTION });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'model_not_found', param: 'model' } });
  });

  it("429 for a request larger than the key's tokens per minute", async () => {
    const starter = await createPlanKey('starter');
    const response = await post({ model: MODEL, input: QUESTION, max_output_tokens: 110_000 }, starter.secret);
    expect(response.status).toBe(429);
    expect(response.headers.get('x-should-retry')).toBe('false');
    expect(await response.json()).toMatchObject({ error: { code: 'request_too_large', type: 'tokens' } });
  });
});

describe('metering', () => {
  it("meters Responses requests as the key's usage, whole and streamed", async () => {
    const key = await createPlanKey('pro');
    const own = new OpenAI({ baseURL: cluster.baseUrl, apiKey: key.secret, maxRetries: 0 });
    const since = Math.floor(Date.now() / 1000) - 3_600;
    const whole = await own.responses.create({ model: MODEL, input: QUESTION });
    const streamed = await own.responses.stream({ model: MODEL, input: 'Tell me about lakes.' }).finalResponse();
    const input = whole.usage!.input_tokens + streamed.usage!.input_tokens;
    const output = whole.usage!.output_tokens + streamed.usage!.output_tokens;
    const totals = await eventually(
      async () => {
        const response = await fetch(`${cluster.baseUrl}/usage?start=${since}&bucket=hour`, { headers: { authorization: `Bearer ${key.secret}` } });
        const page = (await response.json()) as { totals: { requests: number; prompt_tokens: number; completion_tokens: number } };
        return page.totals.requests === 2 ? page.totals : undefined;
      },
      'both requests to be metered',
      30_000,
      200,
    );
    expect(totals).toMatchObject({ requests: 2, prompt_tokens: input, completion_tokens: output });
  });
});

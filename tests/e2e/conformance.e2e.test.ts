/**
 * Wire conformance: the running cluster driven by the official `openai` client (what a user's code
 * sees) and by raw HTTP (what a client hides: the exact SSE bytes, headers, error bodies).
 * The checklist is ../shared/reference/CLIENT_COMPATIBILITY.md.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startCluster, type Cluster } from './cluster.js';
import { hostileBodies, sendHostileBodies } from './hostile-bodies.js';

const CATALOG = new URL('./fixtures/conformance-catalog.yaml', import.meta.url).pathname;
const BODY_LIMIT = 64 * 1024;

let cluster: Cluster;
let client: OpenAI;
let origin: string;

beforeAll(async () => {
  cluster = await startCluster({ env: { CATALOG_PATH: CATALOG, EDGE_BODY_LIMIT_BYTES: String(BODY_LIMIT), EDGE_STREAM_KEEPALIVE_MS: '150' } });
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
  origin = cluster.baseUrl.replace(/\/v1$/, '');
});

afterAll(async () => {
  await cluster?.stop();
});

const hello = [{ role: 'user' as const, content: 'Tell me about rivers.' }];
const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city', 'unit'] },
  },
};

/** Sends a raw POST to the chat endpoint. */
function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** Parses an SSE body into its `data:` payloads, checking the framing on the way. */
function sseEvents(text: string): string[] {
  expect(text.endsWith('\n\n')).toBe(true);
  return text
    .split('\n\n')
    .filter((block) => block.length > 0 && !block.startsWith(':'))
    .map((block) => {
      expect(block.startsWith('data: ')).toBe(true);
      expect(block.includes('\n')).toBe(false);
      return block.slice('data: '.length);
    });
}

async function expectError(response: Response, status: number, param: string | null, code?: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.headers.get('x-request-id')).toBeTruthy();
  const body = (await response.json()) as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.param).toBe(param);
  if (code) expect(body.error.code).toBe(code);
  return body.error;
}

describe('whole responses through the official client', () => {
  it('has every key clients read', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 1 });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe('chat.completion');
    expect(Number.isInteger(completion.created)).toBe(true);
    expect(completion.model).toBe('sim-full');
    const choice = completion.choices[0]!;
    expect(Object.keys(choice).sort()).toEqual(['finish_reason', 'index', 'logprobs', 'message']);
    expect(choice.logprobs).toBeNull();
    expect(choice.message.refusal).toBeNull();
    expect(completion.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBe(0);
  });

  it('returns n choices', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-full', messages: hello, n: 3, max_tokens: 5 });
    expect(completion.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
    expect(completion.choices.every((choice) => choice.finish_reason === 'length')).toBe(true);
  });

  it('calls tools with arguments as a JSON string that fits the schema', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-full',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.id).toBeTruthy();
    const args = JSON.parse(call.function.arguments) as { city: unknown; unit: unknown };
    expect(typeof args.city).toBe('string');
    expect(['c', 'f']).toContain(args.unit);
  });

  it('answers a tool result after a tool call', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-full',
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo","unit":"c"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temperature": 3}' },
      ],
    });
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.choices[0]!.message.content).toBeTruthy();
  });
});

describe('streams through the official client', () => {
  it('streams chunks with one id, the role first and a finish reason last', async () => {
    const stream = await client.chat.completions.create({ model: 'sim-full', messages: hello, stream: true, seed: 4 });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    expect(new Set(chunks.map((chunk) => `${chunk.id}|${chunk.created}|${chunk.model}`)).size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.slice(1).every((chunk) => chunk.choices[0]?.delta.role === undefined)).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.slice(0, -1).every((chunk) => chunk.choices[0]!.finish_reason === null)).toBe(true);
  });

  it('assembles the final message with the stream() helper', async () => {
    const whole = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 9 });
    const runner = client.chat.completions.stream({ model: 'sim-full', messages: hello, seed: 9 });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]!.message.content).toBe(whole.choices[0]!.message.content);
    expect(final.choices[0]!.finish_reason).toBe('stop');
  });

  it('streams tool calls that the helper assembles into valid arguments', async () => {
    const runner = client.chat.completions.stream({
      model: 'sim-full',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      tools: [weatherTool],
      tool_choice: 'required',
    });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(call.id).not.toMatch(/(call_\w+)\1/);
    expect(JSON.parse(call.function.arguments)).toHaveProperty('city');
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
  });

  it('sends a usage chunk with empty choices when asked', async () => {
    const stream = await client.chat.completions.create({ model: 'sim-full', messages: hello, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });
});

describe('log probabilities through the official client', () => {
  type TokenLogprob = OpenAI.ChatCompletionTokenLogprob;

  /** What every token entry must satisfy: OpenAI's four keys, bytes that spell the token, logprobs <= 0, `top` alternatives. */
  function expectTokenEntry(entry: TokenLogprob, top: number) {
    expect(Object.keys(entry).sort()).toEqual(['bytes', 'logprob', 'token', 'top_logprobs']);
    expect(entry.logprob).toBeLessThanOrEqual(0);
    expect(Buffer.from(entry.bytes!).toString('utf8')).toBe(entry.token);
    expect(entry.top_logprobs).toHaveLength(top);
    for (const alternative of entry.top_logprobs) {
      expect(Object.keys(alternative).sort()).toEqual(['bytes', 'logprob', 'token']);
      expect(alternative.logprob).toBeLessThanOrEqual(0);
    }
    if (top > 0) expect(entry.top_logprobs.map((alternative) => alternative.token)).toContain(entry.token);
  }

  it('gives every content token with its logprob, bytes and top_logprobs alternatives', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 12, logprobs: true, top_logprobs: 3 });
    const choice = completion.choices[0]!;
    expect(Object.keys(choice.logprobs!).sort()).toEqual(['content', 'refusal']);
    expect(choice.logprobs!.refusal).toBeNull();
    const tokens = choice.logprobs!.content!;
    expect(tokens.map((entry) => entry.token).join('')).toBe(choice.message.content);
    expect(tokens).toHaveLength(completion.usage!.completion_tokens);
    for (const entry of tokens) expectTokenEntry(entry, 3);
    // Deterministic for a seed.
    const again = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 12, logprobs: true, top_logprobs: 3 });
    expect(again.choices[0]!.logprobs).toEqual(choice.logprobs);
  });

  it("streams each chunk's token logprobs, the same as the whole answer's", async () => {
    const whole = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 13, logprobs: true, top_logprobs: 2 });
    const stream = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 13, logprobs: true, top_logprobs: 2, stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]!.choices[0]!.logprobs).toEqual({ content: [], refusal: null });
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!.choices[0]!.logprobs).toBeNull();
    let content = '';
    const tokens: TokenLogprob[] = [];
    for (const chunk of chunks.slice(1, -1)) {
      const choice = chunk.choices[0]!;
      const own = choice.logprobs!.content!;
      expect(own.map((entry) => entry.token).join('')).toBe(choice.delta.content);
      for (const entry of own) expectTokenEntry(entry, 2);
      content += choice.delta.content ?? '';
      tokens.push(...own);
    }
    expect(tokens.map((entry) => entry.token).join('')).toBe(content);
    expect(tokens).toEqual(whole.choices[0]!.logprobs!.content);
    // The client's stream helper assembles them like OpenAI's.
    const final = await client.chat.completions.stream({ model: 'sim-full', messages: hello, seed: 13, logprobs: true, top_logprobs: 2 }).finalChatCompletion();
    expect(final.choices[0]!.logprobs?.content).toEqual(whole.choices[0]!.logprobs!.content);
  });

  it('gives no alternatives without top_logprobs, and logprobs null when not asked, whole and streamed', async () => {
    const bare = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 14, logprobs: true });
    expect(bare.choices[0]!.logprobs!.content!.length).toBeGreaterThan(0);
    for (const entry of bare.choices[0]!.logprobs!.content!) expectTokenEntry(entry, 0);
    const plain = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 14 });
    expect(plain.choices[0]!.message.content).toBe(bare.choices[0]!.message.content);
    expect(plain.choices[0]!.logprobs).toBeNull();
    const stream = await client.chat.completions.create({ model: 'sim-full', messages: hello, seed: 14, stream: true });
    for await (const chunk of stream) expect(chunk.choices[0]!.logprobs).toBeNull();
  });
});

describe('the deprecated function calling (functions, function_call)', () => {
  const functions = [{ name: 'get_weather', description: weatherTool.function.description, parameters: weatherTool.function.parameters }];

  it('answers with message.function_call, whole and streamed, and takes the result back as a function message', async () => {
    const whole = await client.chat.completions.create({ model: 'sim-full', messages: hello, functions, function_call: { name: 'get_weather' }, seed: 3 });
    const message = whole.choices[0]!.message;
    expect(whole.choices[0]!.finish_reason).toBe('function_call');
    expect(message.function_call?.name).toBe('get_weather');
    expect(JSON.parse(message.function_call!.arguments)).toMatchObject({ city: expect.any(String) });
    expect(message.tool_calls).toBeUndefined();

    const stream = await client.chat.completions.create({
      model: 'sim-full',
      messages: hello,
      functions,
      function_call: { name: 'get_weather' },
      seed: 3,
      stream: true,
    });
    let name = '';
    let args = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      name += delta?.function_call?.name ?? '';
      args += delta?.function_call?.arguments ?? '';
      expect(delta?.tool_calls).toBeUndefined();
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(JSON.parse(args)).toEqual(JSON.parse(message.function_call!.arguments));
    expect(finish).toBe('function_call');

    const answer = await client.chat.completions.create({
      model: 'sim-full',
      functions,
      messages: [
        ...hello,
        { role: 'assistant', content: null, function_call: message.function_call! },
        { role: 'function', name: 'get_weather', content: '{"celsius":21}' },
      ],
    });
    expect(answer.choices[0]!.finish_reason).toBe('stop');
    expect(typeof answer.choices[0]!.message.content).toBe('string');
  });
});

describe('the model list', () => {
  it('lists every model in one page with prices and capabilities', async () => {
    const page = await client.models.list();
    const ids = page.data.map((model) => model.id);
    expect(ids).toEqual(['sim-full', 'sim-text-only', 'vendor/family/sim-slashed']);
    const textOnly = page.data[1] as unknown as {
      object: string;
      owned_by: string;
      context_window: number;
      pricing: { input: number; output: number };
      capabilities: { tools: boolean };
    };
    expect(textOnly).toMatchObject({
      object: 'model',
      owned_by: 'gateway',
      context_window: 4096,
      pricing: { input: 0.2, output: 0.8 },
      capabilities: { tools: false },
    });
  });

  it('retrieves a model whose id contains "/"', async () => {
    const model = await client.models.retrieve('vendor/family/sim-slashed');
    expect(model.id).toBe('vendor/family/sim-slashed');
    const encoded = await fetch(`${cluster.baseUrl}/models/vendor%2Ffamily%2Fsim-slashed`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
    expect(((await encoded.json()) as { id: string }).id).toBe('vendor/family/sim-slashed');
  });

  it('pages with limit and after', async () => {
    const headers = { authorization: `Bearer ${cluster.apiKey}` };
    const first = (await (await fetch(`${cluster.baseUrl}/models?limit=2`, { headers })).json()) as {
      data: Array<{ id: string }>;
      has_more: boolean;
      first_id: string;
      last_id: string;
    };
    expect(first.data.map((model) => model.id)).toEqual(['sim-full', 'sim-text-only']);
    expect(first).toMatchObject({ has_more: true, first_id: 'sim-full', last_id: 'sim-text-only' });
    const second = (await (await fetch(`${cluster.baseUrl}/models?limit=2&after=${first.last_id}`, { headers })).json()) as {
      data: Array<{ id: string }>;
      has_more: boolean;
    };
    expect(second.data.map((model) => model.id)).toEqual(['vendor/family/sim-slashed']);
    expect(second.has_more).toBe(false);
    await expectError(await fetch(`${cluster.baseUrl}/models?limit=0`, { headers }), 400, 'limit');
  });

  it('raises NotFoundError for an unknown model', async () => {
    await expect(client.models.retrieve('nope')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('error classes through the official client', () => {
  it('maps each failure to its client exception', async () => {
    const bad = new OpenAI({ baseURL: cluster.baseUrl, apiKey: 'br-wrong', maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: 'sim-full', messages: hello })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(client.chat.completions.create({ model: 'sim-full', messages: [] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(client.chat.completions.create({ model: 'missing', messages: hello })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    const limited = await client.chat.completions
      .create({ model: 'sim-full', messages: [{ role: 'user', content: 'x [[simulate:error=429]] [[simulate:retry_after_ms=2000]]' }] })
      .catch((error: unknown) => error);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after')).toBe('2');
    const upstream = await client.chat.completions
      .create({ model: 'sim-full', messages: [{ role: 'user', content: 'x [[simulate:error=500]]' }] })
      .catch((error: unknown) => error);
    expect(upstream).toBeInstanceOf(OpenAI.InternalServerError);
    expect((upstream as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(502);
    const timeout = await client.chat.completions
      .create({ model: 'sim-full', messages: [{ role: 'user', content: 'x [[simulate:error=timeout]]' }] })
      .catch((error: unknown) => error);
    expect((timeout as InstanceType<typeof OpenAI.InternalServerError>).status).toBe(504);
  });

  it('refuses a parameter the model cannot honour before any upstream call', async () => {
    const error = await client.chat.completions.create({ model: 'sim-text-only', messages: hello, tools: [weatherTool] }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools');
    const image = await post({
      model: 'sim-text-only',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }],
    });
    await expectError(image, 400, 'messages', 'unsupported_parameter');
    const json = await post({ model: 'sim-text-only', messages: hello, response_format: { type: 'json_object' } });
    await expectError(json, 400, 'response_format', 'unsupported_parameter');
    const tooLong = await post({ model: 'sim-full', messages: hello, max_tokens: 4000 });
    await expectError(tooLong, 400, 'max_tokens');
  });
});

describe('work refused before it is done', () => {
  it('refuses a request without a key with 401 before reading its body', async () => {
    const response = await fetch(`${cluster.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"model": "sim-full", "messages": [',
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('missing_api_key');
  });

  it('refuses a prompt longer than the model, or than any model for auto, without counting all of it', async () => {
    // About 12,000 tokens: over sim-full's 4,096 and over the largest window of this catalog (8,192).
    const long = 'lorem ipsum dolor sit amet '.repeat(2_400);
    for (const [model, message] of [
      [
        'sim-full',
        "This model's maximum context length is 4096 tokens. However, your messages resulted in more than 4096 tokens. Please reduce the length of the messages.",
      ],
      [
        'auto',
        "The largest model's maximum context length is 8192 tokens. However, your messages resulted in more than 8192 tokens. Please reduce the length of the messages.",
      ],
    ] as const) {
      const response = await post({ model, messages: [{ role: 'user', content: long }] });
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({ error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } });
    }
  });
});

describe('raw HTTP', () => {
  it('sends the exact SSE framing, the gateway object last, then [DONE] and closes', async () => {
    const response = await post({ model: 'sim-full', messages: hello, stream: true, max_tokens: 8 }, { accept: 'application/json' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('x-request-id')).toBeTruthy();
    expect(response.headers.get('openai-processing-ms')).toMatch(/^\d+$/);
    const events = sseEvents(await response.text());
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event) as Record<string, unknown> & { choices: Array<{ finish_reason: string | null }> });
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk')).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices[0]!.finish_reason).toBe('length');
    expect(last.gateway).toMatchObject({ routed_to: 'sim-full' });
    expect(chunks.slice(0, -1).every((chunk) => chunk.gateway === undefined)).toBe(true);
    expect('usage' in chunks[0]!).toBe(false);
  });

  it('puts the gateway object on the usage chunk when usage was asked for', async () => {
    const response = await post({ model: 'sim-full', messages: hello, stream: true, stream_options: { include_usage: true } });
    const chunks = sseEvents(await response.text())
      .slice(0, -1)
      .map((event) => JSON.parse(event) as Record<string, unknown>);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.gateway).toMatchObject({ routed_to: 'sim-full' });
    expect((last.gateway as { cost_usd: number }).cost_usd).toBeGreaterThan(0);
  });

  it('ends a stream that fails after the first byte with an error event, never [DONE]', async () => {
    const response = await post({ model: 'sim-full', messages: [{ role: 'user', content: 'go [[simulate:fail_after=3]]' }], stream: true });
    expect(response.status).toBe(200);
    const events = sseEvents(await response.text());
    expect(events).not.toContain('[DONE]');
    const error = JSON.parse(events.at(-1)!) as { error: Record<string, unknown> };
    expect(Object.keys(error.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(events.length).toBeGreaterThan(1);
  });

  it('answers a failure before the first byte with a status, not a stream', async () => {
    const response = await post({ model: 'sim-full', messages: [{ role: 'user', content: 'go [[simulate:error=503]]' }], stream: true });
    await expectError(response, 502, null, 'upstream_error');
  });

  it('keeps a silent stream alive with SSE comments only', async () => {
    const response = await post({ model: 'sim-full', messages: [{ role: 'user', content: 'slow [[simulate:ttft_ms=700]]' }], stream: true, max_tokens: 3 });
    const text = await response.text();
    expect(text.startsWith(': ping\n\n') || text.includes('\n\n: ping\n\n')).toBe(true);
    expect(sseEvents(text).at(-1)).toBe('[DONE]');
  });

  it('echoes a caller request id and sets one on every response', async () => {
    const ok = await post({ model: 'sim-full', messages: hello }, { 'x-request-id': 'trace-123' });
    expect(ok.headers.get('x-request-id')).toBe('trace-123');
    expect(ok.headers.get('openai-processing-ms')).toMatch(/^\d+$/);
    for (const response of [await fetch(`${origin}/nowhere`), await fetch(`${cluster.baseUrl}/chat/completions`), await post({ model: 'sim-full' })]) {
      expect(response.headers.get('x-request-id')).toMatch(/^req_/);
      await response.arrayBuffer();
    }
  });

  it('gives each malformed request its own clear error', async () => {
    await expectError(await post('{"model": "sim-full", "messages": ['), 400, null, 'invalid_json');
    await expectError(await post('[1, 2]'), 400, null, 'invalid_body');
    await expectError(await post('"text"'), 400, null, 'invalid_body');
    await expectError(await post('null'), 400, null);
    await expectError(await post(`{"model":"sim-full","messages":${'['.repeat(30_000)}`), 400, null, 'invalid_body');
    await expectError(
      await post(
        `{"model":"sim-full","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${'{"type":"object","properties":{"a":'.repeat(100)}{}${'}}'.repeat(100)}}}]}`,
      ),
      400,
      'tools[0].function.parameters',
      'invalid_function_parameters',
    );
    await expectError(
      await post(JSON.stringify({ model: 'sim-full', messages: hello }), { 'content-type': 'text/plain' }),
      415,
      null,
      'unsupported_media_type',
    );
    await expectError(await post({ model: 'sim-full', messages: [{ role: 'user', content: 'x'.repeat(BODY_LIMIT) }] }), 413, null, 'request_too_large');
    const notAllowed = await fetch(`${cluster.baseUrl}/chat/completions`, { method: 'GET', headers: { authorization: `Bearer ${cluster.apiKey}` } });
    await expectError(notAllowed, 405, null, 'method_not_allowed');
    await expectError(await fetch(`${origin}/v1/unknown`), 404, null, 'unknown_url');
    const missingKey = await fetch(`${cluster.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-full', messages: hello }),
    });
    const error = await expectError(missingKey, 401, null, 'missing_api_key');
    expect(missingKey.headers.get('x-should-retry')).toBe('false');
    expect(String(error.message)).toMatch(/API key/);
  });

  it('checks the key before anything else about the request: a wrong key is a 401 whatever the body', async () => {
    const wrongKey = { authorization: 'Bearer br-0000000000000000000000000000000000000000' };
    const valid = JSON.stringify({ model: 'sim-full', messages: hello });
    const refused = [
      await post(valid, { ...wrongKey, 'content-type': 'text/plain' }),
      await post('{"model": "sim-full", "messages": [', wrongKey),
      await post('[1, 2]', wrongKey),
      await post({ model: 'sim-full', messages: [{ role: 'x', content: 'hi' }], temperature: 9 }, wrongKey),
      await post({ model: 'no-such-model', messages: hello }, wrongKey),
      await post({ model: 'sim-full', messages: [{ role: 'user', content: 'x'.repeat(BODY_LIMIT) }] }, wrongKey),
      await post(valid, wrongKey),
    ];
    for (const response of refused) await expectError(response, 401, null, 'invalid_api_key');
    // The right key still gets each body's own error.
    await expectError(await post(valid, { 'content-type': 'text/plain' }), 415, null, 'unsupported_media_type');
    await expectError(await post({ model: 'no-such-model', messages: hello }), 404, 'model', 'model_not_found');
    const models = await fetch(`${cluster.baseUrl}/models?limit=0`, { headers: wrongKey });
    await expectError(models, 401, null, 'invalid_api_key');
  });

  it('drops prototype-poisoning keys instead of failing', async () => {
    const response = await post('{"model":"sim-full","messages":[{"role":"user","content":"hi"}],"__proto__":{"polluted":true}}');
    expect(response.status).toBe(200);
    await response.arrayBuffer();
  });

  it('allows browser clients through CORS', async () => {
    const preflight = await fetch(`${cluster.baseUrl}/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-stainless-os, x-stainless-lang',
      },
    });
    expect(preflight.status).toBeLessThan(300);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/x-stainless-os/);
    const actual = await post({ model: 'sim-full', messages: hello }, { origin: 'https://app.example' });
    expect(actual.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(actual.headers.get('access-control-expose-headers')).toMatch(/x-request-id/);
  });
});

describe('hostile bodies', () => {
  it('never answers 5xx and always answers with the OpenAI envelope', async () => {
    const statuses = await sendHostileBodies([...hostileBodies(600, ['sim-full', 'auto'])], (body) => post(body));
    expect(statuses.get(400)).toBeGreaterThan(100);
  });
});

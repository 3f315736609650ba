import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { beforeAll, describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, MessageOutput } from '@gateway/proto';
import {
  startFakeContainerCredentials,
  startFakeImds,
  startFakeSts,
  type BedrockReply,
  type BedrockStreamMessage,
  BEDROCK_TEST_REGION,
  bedrockModel,
  providerFixture,
} from '@gateway/testing';
import {
  assistantTurnWithThinking,
  chunksOf,
  collect,
  drain,
  gatewayErrorOf,
  simpleRequest,
  THINKING_SIGNATURE,
  textOf,
} from '../../testing/provider-calls.js';
import type { ProviderContext } from '../provider.js';
import { BedrockProvider } from './bedrock-provider.js';
import { bedrockError, contextOn, useBedrockUnderTest } from '../../testing/bedrock-under-test.js';

const CREDENTIALS = { accessKeyId: 'AKIAFAKEBEDROCKTEST1', secretAccessKey: 'fake-secret-0123456789abcdefghijklmnopqrstuv' };
const API_KEY_ENV = 'FAKE_BEDROCK_API_KEY';
const API_KEY = 'ABSKfakebedrockapikey0123456789';

const json = (name: string) => JSON.parse(providerFixture('bedrock', name)) as object;
const converse = (name: string): BedrockReply => ({ kind: 'converse', body: json(name) });
const stream = (name: string, options: { delayMs?: number; end?: boolean } = {}): BedrockReply => ({
  kind: 'stream',
  messages: json(name) as BedrockStreamMessage[],
  ...options,
});

const bedrock = useBedrockUnderTest(CREDENTIALS, { variable: API_KEY_ENV, value: API_KEY });
let model: CatalogModel;
beforeAll(() => {
  model = bedrockModel(bedrock.fake.baseUrl);
});

function contextOf(signal?: AbortSignal, catalogModel: CatalogModel = model): ProviderContext {
  return contextOn(catalogModel, signal);
}

function complete(reply: BedrockReply, request: ChatRequestOutput = simpleRequest(), on: BedrockProvider = bedrock.provider, catalogModel = model) {
  bedrock.fake.reply(() => reply);
  return on.complete(request, contextOf(undefined, catalogModel));
}

function streamed(reply: BedrockReply, request: ChatRequestOutput = simpleRequest()) {
  bedrock.fake.reply(() => reply);
  return collect(bedrock.provider.stream(request, contextOf()));
}

const WEATHER_TOOL = {
  type: 'function',
  function: { name: 'get_weather', description: 'Weather of a city', parameters_json: '{"type":"object","properties":{"location":{"type":"string"}}}' },
};

/** An assistant turn that only calls get_weather with `args`. */
function weatherCall(args: string): MessageOutput {
  return {
    role: 'ROLE_ASSISTANT',
    content: 'text',
    text: '',
    tool_calls: [{ id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: args } }],
  };
}

/** A request with WEATHER_TOOL after the user's `question`, the assistant's turn `answer` calling the tool, and its result 21C. */
function afterWeatherCall(question: string, answer: MessageOutput, extra: Partial<ChatRequestOutput>): ChatRequestOutput {
  return simpleRequest({
    messages: [
      { role: 'ROLE_USER', content: 'text', text: question, tool_calls: [] },
      answer,
      { role: 'ROLE_TOOL', content: 'text', text: '21C', tool_call_id: 'tooluse_1', tool_calls: [] },
    ],
    tools: [WEATHER_TOOL],
    ...extra,
  });
}

describe('BedrockProvider: requests it sends', () => {
  it('posts a SigV4-signed Converse body to /model/{inference profile}/converse that the fake verifies with the same secret', async () => {
    const request: ChatRequestOutput = simpleRequest({
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'Be brief.', tool_calls: [] },
        { role: 'ROLE_USER', content: 'text', text: 'Hello!', tool_calls: [] },
      ],
      max_tokens: 256,
      temperature: 0.2,
      top_p: 0.9,
      stop: ['END'],
    });
    await complete(converse('converse.json'), request);
    expect(bedrock.fake.refusals).toEqual([]);
    const received = bedrock.fake.requests[0]!;
    expect(received.path).toBe('/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse');
    expect(received.modelId).toBe('us.anthropic.claude-sonnet-4-20250514-v1:0');
    expect(received.signedBy).toBe(CREDENTIALS.accessKeyId);
    expect(received.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIAFAKEBEDROCKTEST1\/\d{8}\/us-east-1\/bedrock\/aws4_request/);
    expect(received.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'Hello!' }] }],
      system: [{ text: 'Be brief.' }],
      inferenceConfig: { maxTokens: 256, temperature: 0.2, topP: 0.9, stopSequences: ['END'] },
    });
  });

  it('sends tools, the tool choice, earlier tool calls and their results as toolConfig, toolUse and toolResult', async () => {
    const request = afterWeatherCall('Weather in Paris?', weatherCall('{"location":"Paris"}'), { tool_choice: { function_name: 'get_weather' } });
    await complete(converse('converse.json'), request);
    expect(bedrock.fake.refusals).toEqual([]);
    expect(bedrock.fake.requests[0]!.body).toMatchObject({
      messages: [
        { role: 'user', content: [{ text: 'Weather in Paris?' }] },
        { role: 'assistant', content: [{ toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { location: 'Paris' } } }] },
        { role: 'user', content: [{ toolResult: { toolUseId: 'tooluse_1', content: [{ text: '21C' }] } }] },
      ],
      toolConfig: {
        tools: [
          {
            toolSpec: {
              name: 'get_weather',
              description: 'Weather of a city',
              inputSchema: { json: { type: 'object', properties: { location: { type: 'string' } } } },
            },
          },
        ],
        toolChoice: { tool: { name: 'get_weather' } },
      },
    });
  });

  it('sends thinking and the Bedrock betas as additionalModelRequestFields, and earlier signed and redacted reasoning unchanged', async () => {
    const request = afterWeatherCall('Weather in Paris?', assistantTurnWithThinking('RW13S0FoZ0JFZ3kz', 'tooluse_1'), {
      max_tokens: 4096,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      anthropic_betas: { flags: ['interleaved-thinking-2025-05-14', 'claude-code-20250219'] },
    });
    await complete(converse('converse.json'), request);
    expect(bedrock.fake.refusals).toEqual([]);
    const body = bedrock.fake.requests[0]!.body as { messages: unknown[]; additionalModelRequestFields: unknown };
    // Only the flags Bedrock accepts: it refuses a request naming Anthropic-API-only betas.
    expect(body.additionalModelRequestFields).toEqual({
      thinking: { type: 'enabled', budget_tokens: 2048 },
      anthropic_beta: ['interleaved-thinking-2025-05-14'],
    });
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { reasoningContent: { reasoningText: { text: 'I should look it up.', signature: THINKING_SIGNATURE } } },
        { reasoningContent: { redactedContent: 'RW13S0FoZ0JFZ3kz' } },
        { text: 'Checking.' },
        { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather', input: { location: 'Paris' } } },
      ],
    });
  });

  it('puts a cachePoint after each block, system prompt and tool that carries cache_control', async () => {
    const request = simpleRequest({
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'A long system prompt.', tool_calls: [], cache_control: { type: 'ephemeral' } },
        {
          role: 'ROLE_USER',
          content: 'parts',
          parts: {
            parts: [
              { text: 'A long document.', part: 'text', cache_control: { type: 'ephemeral' } },
              { text: 'Summarize it.', part: 'text' },
            ],
          },
          tool_calls: [],
        },
      ],
      tools: [{ ...WEATHER_TOOL, cache_control: { type: 'ephemeral' } }],
    });
    await complete(converse('converse.json'), request);
    expect(bedrock.fake.refusals).toEqual([]);
    expect(bedrock.fake.requests[0]!.body).toMatchObject({
      system: [{ text: 'A long system prompt.' }, { cachePoint: { type: 'default' } }],
      messages: [{ role: 'user', content: [{ text: 'A long document.' }, { cachePoint: { type: 'default' } }, { text: 'Summarize it.' }] }],
      toolConfig: { tools: [{ toolSpec: { name: 'get_weather' } }, { cachePoint: { type: 'default' } }] },
    });
  });

  it('refuses what Converse cannot carry before any call: an image URL, tool_choice none over earlier tool calls, n > 1', async () => {
    const imageUrl = simpleRequest({
      messages: [
        { role: 'ROLE_USER', content: 'parts', parts: { parts: [{ image_url: { url: 'https://example.com/cat.png' }, part: 'image_url' }] }, tool_calls: [] },
      ],
    });
    await expect(complete(converse('converse.json'), imageUrl)).rejects.toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      message: expect.stringContaining('base64 data URLs'),
    });
    const none = afterWeatherCall('Weather?', weatherCall('{}'), { tool_choice: { mode: 'none' } });
    await expect(complete(converse('converse.json'), none)).rejects.toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      message: expect.stringContaining('tool_choice "none"'),
    });
    // The Claude conversion's own refusals name the provider the caller chose.
    await expect(complete(converse('converse.json'), simpleRequest({ n: 2 }))).rejects.toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      param: 'n',
      message: 'The bedrock provider returns one choice per request; n must be 1.',
    });
    expect(bedrock.fake.requests).toHaveLength(0);
  });

  it('sends a Bedrock API key as a bearer token, unsigned, when the catalog names one', async () => {
    const keyed = bedrockModel(bedrock.fake.baseUrl, {
      upstream: { model: 'anthropic.claude-3-5-haiku-20241022-v1:0', region: BEDROCK_TEST_REGION, base_url: bedrock.fake.baseUrl, api_key_env: API_KEY_ENV },
    });
    await complete(converse('converse.json'), simpleRequest(), bedrock.provider, keyed);
    expect(bedrock.fake.requests[0]!.signedBy).toBe('api-key');
    expect(bedrock.fake.requests[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(bedrock.fake.requests[0]!.headers['x-amz-date']).toBeUndefined();
  });
});

describe('BedrockProvider: whole answers', () => {
  it('maps text, the finish reason and usage', async () => {
    const response = await complete(converse('converse.json'));
    expect(response.model).toBe('bedrock/claude-sonnet-4');
    expect(response.id).toMatch(/^chatcmpl-/);
    expect(response.choices?.[0]).toMatchObject({
      finish_reason: 'FINISH_REASON_STOP',
      message: { content: 'Hello! How can I help you today?', tool_calls: [] },
    });
    expect(response.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 9, total_tokens: 21, cached_tokens: 0, cache_write_tokens: 0 });
  });

  it('maps signed and redacted reasoning to thinking blocks, tool calls, and cache reads and writes into the prompt tokens', async () => {
    const response = await complete(converse('converse-thinking-tools.json'));
    expect(response.choices?.[0]).toMatchObject({
      finish_reason: 'FINISH_REASON_TOOL_CALLS',
      message: {
        content: 'Let me check.',
        tool_calls: [{ id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } }],
        thinking: {
          blocks: [
            { thinking: { thinking: 'The user wants the weather in Paris; I will call the tool.', signature: THINKING_SIGNATURE } },
            { redacted_thinking: { data: 'RW13S0FoZ0JFZ3kz' } },
          ],
        },
      },
    });
    expect(response.usage).toEqual({
      prompt_tokens: 30 + 1800 + 300,
      completion_tokens: 61,
      total_tokens: 2191,
      cached_tokens: 1800,
      reasoning_tokens: 0,
      cache_write_tokens: 300,
      cache_write_5m_tokens: 300,
      cache_write_1h_tokens: 0,
    });
  });

  it('reports a guardrail intervention as content_filter', async () => {
    const response = await complete(converse('converse-guardrail.json'));
    expect(response.choices?.[0]?.finish_reason).toBe('FINISH_REASON_CONTENT_FILTER');
  });
});

describe('BedrockProvider: streamed answers (AWS event stream)', () => {
  it('decodes ConverseStream and yields text chunks, the finish reason, then the usage', async () => {
    const events = await streamed(stream('converse-stream.json'));
    expect(bedrock.fake.requests[0]!.path).toBe('/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream');
    expect(bedrock.fake.requests[0]!.headers.accept).toBe('application/vnd.amazon.eventstream');
    const chunks = chunksOf(events);
    expect(chunks[0]?.choices?.[0]?.delta).toMatchObject({ role: 'ROLE_ASSISTANT', content: '' });
    expect(textOf(chunks)).toBe('Hello! How can I help?');
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(events.at(-1)).toEqual({ type: 'usage', usage: expect.objectContaining({ prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 }) });
  });

  it('streams thinking deltas and their signature, redacted reasoning, text and tool call fragments, with cache counts', async () => {
    const events = await streamed(stream('converse-stream-thinking-tools.json'));
    const deltas = chunksOf(events).map((chunk) => chunk.choices?.[0]?.delta);
    expect(deltas.flatMap((delta) => (delta?.thinking ? [delta.thinking] : [])).join('')).toBe('The user wants the weather in Paris.');
    expect(deltas.flatMap((delta) => (delta?.thinking_signature ? [delta.thinking_signature] : []))).toEqual([THINKING_SIGNATURE]);
    expect(deltas.flatMap((delta) => (delta?.redacted_thinking ? [delta.redacted_thinking] : []))).toEqual(['RW13S0FoZ0JFZ3kz']);
    expect(deltas.map((delta) => delta?.content ?? '').join('')).toBe('Let me check.');
    const calls = deltas.flatMap((delta) => delta?.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, id: 'tooluse_kZJMlvQmRJ6eAyJE5GIl7Q', type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(calls.map((call) => call.function?.arguments ?? '').join('')).toBe('{"location": "Paris"}');
    expect(chunksOf(events).at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: expect.objectContaining({ prompt_tokens: 2130, cached_tokens: 1800, cache_write_tokens: 300, completion_tokens: 61 }),
    });
  });

  it('fails a stream cut off before messageStop and metadata as truncated, and one whose last message is cut mid-frame the same way', async () => {
    const messages = json('converse-stream.json') as BedrockStreamMessage[];
    const cut = await gatewayErrorOf(streamed({ kind: 'stream', messages: messages.slice(0, 3) }));
    expect(cut).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error' });
    const midFrame = await drainStream({ kind: 'stream', messages, cutLastBytes: 10 });
    expect(midFrame.failure).toMatchObject({ kind: 'truncated' });
  });

  it('fails on an exception message inside the stream by its type: throttlingException is a retryable 429', async () => {
    const messages: BedrockStreamMessage[] = [
      ...(json('converse-stream.json') as BedrockStreamMessage[]).slice(0, 2),
      { exception: 'throttlingException', payload: { message: 'Too many tokens, please wait before trying again.' } },
    ];
    const { events, failure } = await drainStream({ kind: 'stream', messages });
    expect(chunksOf(events).length).toBeGreaterThan(0);
    expect(failure).toMatchObject({ kind: 'stream_error', status: 429, retryable: true });
  });

  it('closes the upstream connection at once when the caller goes away mid-stream', async () => {
    // The upstream's next event is a minute away: the connection closes when the caller leaves, not then.
    bedrock.fake.reply(() => stream('converse-stream.json', { delayMs: 60_000, end: false }));
    const controller = new AbortController();
    const iterator = bedrock.provider.stream(simpleRequest(), contextOf(controller.signal))[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toMatchObject({ type: 'chunk' });
    const pending = iterator.next();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    await bedrock.fake.requests[0]!.closed;
    expect(bedrock.fake.requests[0]!.finished).toBe(false);
  });
});

function drainStream(reply: BedrockReply) {
  bedrock.fake.reply(() => reply);
  return drain(bedrock.provider.stream(simpleRequest(), contextOf()));
}

describe('BedrockProvider: errors mapped to the gateway rules', () => {
  it('ValidationException: 400 to the caller with Bedrock message', async () => {
    const failure = await gatewayErrorOf(
      complete(bedrockError(400, 'ValidationException', 'The model returned the following errors: max_tokens: 99999999 > 64000')),
    );
    expect(failure).toMatchObject({ code: GrpcStatus.INVALID_ARGUMENT, reason: 'upstream_invalid_request', retryable: false, upstreamStatus: 400 });
    expect(failure.message).toContain('max_tokens: 99999999 > 64000');
  });

  it('ThrottlingException and ServiceQuotaExceededException: rate limited, retryable, with the retry-after', async () => {
    const throttled = await gatewayErrorOf(
      complete(bedrockError(429, 'ThrottlingException', 'Too many requests, please wait before trying again.', { 'retry-after': '3' })),
    );
    expect(throttled).toMatchObject({ code: GrpcStatus.RESOURCE_EXHAUSTED, reason: 'upstream_rate_limited', retryable: true, retryAfterMs: 3000 });
    const quota = await gatewayErrorOf(complete(bedrockError(400, 'ServiceQuotaExceededException', 'Too many tokens per day.')));
    expect(quota).toMatchObject({ code: GrpcStatus.RESOURCE_EXHAUSTED, reason: 'upstream_rate_limited', retryable: true });
  });

  it('ServiceUnavailableException and ModelNotReadyException (sent as 429): unavailable, retryable', async () => {
    for (const reply of [
      bedrockError(503, 'ServiceUnavailableException', 'Service unavailable.'),
      bedrockError(429, 'ModelNotReadyException', 'Model is not ready.'),
    ]) {
      expect(await gatewayErrorOf(complete(reply))).toMatchObject({
        code: GrpcStatus.UNAVAILABLE,
        reason: 'upstream_error',
        retryable: true,
        upstreamStatus: 503,
      });
    }
  });

  it('AccessDeniedException and ResourceNotFoundException: the gateway configuration is rejected, not retried', async () => {
    const denied = await gatewayErrorOf(
      complete(bedrockError(403, 'AccessDeniedException', "You don't have access to the model with the specified model ID.")),
    );
    expect(denied).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', retryable: false });
    const missing = await gatewayErrorOf(complete(bedrockError(404, 'ResourceNotFoundException', 'Model not found.')));
    expect(missing).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected' });
  });

  it('a wrong secret is refused by the fake as AWS refuses it (403 InvalidSignatureException), and the secret is in no message', async () => {
    const wrong = new BedrockProvider({
      pools: bedrock.pools,
      environment: {},
      awsCredentials: async () => ({ ...CREDENTIALS, secretAccessKey: 'not-the-secret-0123456789abcdefghijklmnop' }),
    });
    const failure = await gatewayErrorOf(complete(converse('converse.json'), simpleRequest(), wrong));
    expect(failure).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', upstreamStatus: 403 });
    expect(bedrock.fake.refusals).toEqual([expect.stringMatching(/^403 InvalidSignatureException: The request signature we calculated does not match/)]);
    expect(bedrock.fake.requests).toHaveLength(0);
    expect(failure.message).not.toContain('not-the-secret');
  });

  it('a chain that finds no credentials: the model is unavailable, no request is sent', async () => {
    const none = new BedrockProvider({
      pools: bedrock.pools,
      environment: {},
      awsCredentials: async () => Promise.reject(new Error('Could not load credentials from any providers')),
    });
    const failure = await gatewayErrorOf(complete(converse('converse.json'), simpleRequest(), none));
    expect(failure).toMatchObject({ code: GrpcStatus.UNAVAILABLE, retryable: false });
    expect(bedrock.fake.requests).toHaveLength(0);
  });
});

describe('the fake Bedrock checks SigV4 and bodies as AWS does', () => {
  /** Posts a body signed at `signedAt`, then sends `sentBody` (the same unless a test changes it after signing). */
  async function post(options: { signedAt?: Date; body: string; sentBody?: string; secret?: string }) {
    const url = new URL(`${bedrock.fake.baseUrl}/model/${encodeURIComponent('us.anthropic.claude-sonnet-4-20250514-v1:0')}/converse`);
    const signer = new SignatureV4({
      service: 'bedrock',
      region: BEDROCK_TEST_REGION,
      sha256: Sha256,
      credentials: { ...CREDENTIALS, secretAccessKey: options.secret ?? CREDENTIALS.secretAccessKey },
    });
    const signed = await signer.sign(
      {
        method: 'POST',
        protocol: 'http:',
        hostname: url.hostname,
        port: Number(url.port),
        path: url.pathname,
        query: {},
        headers: { host: url.host, 'content-type': 'application/json' },
        body: options.body,
      },
      options.signedAt ? { signingDate: options.signedAt } : {},
    );
    const { host: _host, ...headers } = signed.headers as Record<string, string>;
    const response = await fetch(url, { method: 'POST', headers, body: options.sentBody ?? options.body });
    return { status: response.status, type: response.headers.get('x-amzn-errortype')?.split(':')[0], body: (await response.json()) as { message?: string } };
  }
  const body = JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'Hello!' }] }] });

  it('accepts a correctly signed request', async () => {
    bedrock.fake.reply(() => converse('converse.json'));
    expect((await post({ body })).status).toBe(200);
  });

  it('refuses a body changed after signing, a date more than 5 minutes off, and a wrong secret', async () => {
    bedrock.fake.reply(() => converse('converse.json'));
    const changed = await post({ body, sentBody: body.replace('Hello!', 'Hellp!') });
    expect(changed).toMatchObject({ status: 403, type: 'InvalidSignatureException' });
    const skewed = await post({ body, signedAt: new Date(Date.now() - 6 * 60 * 1000) });
    expect(skewed).toMatchObject({ status: 403, type: 'InvalidSignatureException' });
    expect(skewed.body.message).toMatch(/^Signature expired/);
    const wrongSecret = await post({ body, secret: 'wrong-secret-0123456789abcdefghijklmnopqrst' });
    expect(wrongSecret).toMatchObject({ status: 403, type: 'InvalidSignatureException' });
    expect(bedrock.fake.requests).toHaveLength(0);
  });

  it('refuses bodies that do not match the SDK shapes: an unknown field, a union with two members, a missing required member', async () => {
    for (const [shape, problem] of [
      [{ messages: [{ role: 'user', content: [{ text: 'Hi' }] }], temperature: 0.5 }, 'extraneous key [temperature]'],
      [{ messages: [{ role: 'user', content: [{ text: 'Hi', cachePoint: { type: 'default' } }] }] }, 'exactly one of'],
      [{ messages: [{ role: 'user' }] }, 'required key [content] not found'],
    ] as const) {
      const answer = await post({ body: JSON.stringify(shape) });
      expect(answer).toMatchObject({ status: 400, type: 'ValidationException' });
      expect(answer.body.message).toContain(problem);
    }
  });
});

describe("BedrockProvider with AWS's default credential chain", () => {
  /** Runs `action` with the process environment set as AWS's chain reads it, then restores it. */
  async function withAwsEnvironment<T>(variables: Record<string, string>, action: () => Promise<T>): Promise<T> {
    const names = Object.keys(process.env).filter((name) => name.startsWith('AWS_'));
    const saved = Object.fromEntries([...names, ...Object.keys(variables)].map((name) => [name, process.env[name]]));
    const home = mkdtempSync(join(tmpdir(), 'aws-chain-'));
    for (const name of names) delete process.env[name];
    // No shared files of the machine's user, no instance metadata lookups.
    Object.assign(process.env, {
      AWS_CONFIG_FILE: join(home, 'config'),
      AWS_SHARED_CREDENTIALS_FILE: join(home, 'credentials'),
      AWS_EC2_METADATA_DISABLED: 'true',
      ...variables,
    });
    try {
      return await action();
    } finally {
      for (const name of Object.keys(process.env)) if (name.startsWith('AWS_')) delete process.env[name];
      for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
      rmSync(home, { recursive: true, force: true });
    }
  }

  it('signs with the keys of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY', async () => {
    await withAwsEnvironment({ AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey }, async () => {
      const chained = new BedrockProvider({ pools: bedrock.pools, environment: {} });
      const response = await complete(converse('converse.json'), simpleRequest(), chained);
      expect(response.choices?.[0]?.message?.content).toBe('Hello! How can I help you today?');
      expect(bedrock.fake.requests[0]!.signedBy).toBe(CREDENTIALS.accessKeyId);
    });
  });

  it('signs with the keys of the profile AWS_PROFILE names in the shared credentials file', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'aws-profile-'));
    const credentialsFile = join(directory, 'credentials');
    writeFileSync(
      credentialsFile,
      `[default]\naws_access_key_id = AKIANOTTHISONE000000\naws_secret_access_key = wrong\n\n[gateway]\naws_access_key_id = ${CREDENTIALS.accessKeyId}\naws_secret_access_key = ${CREDENTIALS.secretAccessKey}\n`,
    );
    try {
      await withAwsEnvironment({ AWS_PROFILE: 'gateway', AWS_SHARED_CREDENTIALS_FILE: credentialsFile }, async () => {
        await complete(converse('converse.json'), simpleRequest(), new BedrockProvider({ pools: bedrock.pools, environment: {} }));
      });
      expect(bedrock.fake.refusals).toEqual([]);
      expect(bedrock.fake.requests[0]!.signedBy).toBe(CREDENTIALS.accessKeyId);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('takes an ECS task role or EKS Pod Identity from the container credentials endpoint, with its authorization token file', async () => {
    const authorizationToken = 'pod-identity-token-0123456789';
    const endpoint = await startFakeContainerCredentials({ authorizationToken, onIssue: (issued) => bedrock.fake.addCredentials(issued) });
    const directory = mkdtempSync(join(tmpdir(), 'pod-identity-'));
    const tokenFile = join(directory, 'token');
    writeFileSync(tokenFile, authorizationToken);
    try {
      await withAwsEnvironment(
        { AWS_CONTAINER_CREDENTIALS_FULL_URI: `${endpoint.url}/v1/credentials`, AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: tokenFile },
        async () => {
          await complete(converse('converse.json'), simpleRequest(), new BedrockProvider({ pools: bedrock.pools, environment: {} }));
        },
      );
      expect(endpoint.served()).toBe(1);
      expect(bedrock.fake.requests[0]!.signedBy).toBe(endpoint.credentials.accessKeyId);
      expect(bedrock.fake.requests[0]!.headers['x-amz-security-token']).toBe(endpoint.credentials.sessionToken);
    } finally {
      await endpoint.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("takes an EC2 instance role from the instance metadata service (IMDSv2's session token)", async () => {
    const imds = await startFakeImds({ roleName: 'gateway-executor', onIssue: (issued) => bedrock.fake.addCredentials(issued) });
    try {
      // The metadata service on, at the fake's address: the chain's last resort.
      await withAwsEnvironment({ AWS_EC2_METADATA_DISABLED: 'false', AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url }, async () => {
        await complete(converse('converse.json'), simpleRequest(), new BedrockProvider({ pools: bedrock.pools, environment: {} }));
      });
      expect(imds.served()).toBeGreaterThanOrEqual(1);
      expect(bedrock.fake.requests[0]!.signedBy).toBe(imds.credentials.accessKeyId);
    } finally {
      await imds.close();
    }
  });

  it('exchanges a web identity token file (IRSA) at STS and signs with the temporary credentials and their session token', async () => {
    const roleArn = 'arn:aws:iam::123456789012:role/gateway-executor';
    const token = 'eyJhbGciOiJSUzI1NiJ9.fake-service-account-token.signature';
    const sts = await startFakeSts({ roleArn, token, onIssue: (issued) => bedrock.fake.addCredentials(issued) });
    const directory = mkdtempSync(join(tmpdir(), 'irsa-'));
    const tokenFile = join(directory, 'token');
    writeFileSync(tokenFile, token);
    try {
      await withAwsEnvironment(
        { AWS_WEB_IDENTITY_TOKEN_FILE: tokenFile, AWS_ROLE_ARN: roleArn, AWS_REGION: BEDROCK_TEST_REGION, AWS_ENDPOINT_URL_STS: sts.url },
        async () => {
          const chained = new BedrockProvider({ pools: bedrock.pools, environment: {} });
          await complete(converse('converse.json'), simpleRequest(), chained);
          await complete(converse('converse.json'), simpleRequest(), chained);
        },
      );
      // One exchange: the chain caches the credentials until they near expiry.
      expect(sts.exchanged).toEqual([token]);
      expect(bedrock.fake.requests.map((request) => request.signedBy)).toEqual([expect.stringMatching(/^ASIA/), expect.stringMatching(/^ASIA/)]);
      expect(bedrock.fake.requests[0]!.headers['x-amz-security-token']).toBeTruthy();
    } finally {
      await sts.close();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

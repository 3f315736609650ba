import { describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import type { ChatRequestOutput } from '@gateway/proto';
import { replayJson, replayRaw, replaySse, anthropicModel, PROVIDER_TEST_KEY, providerFixture } from '@gateway/testing';
import { chunksOf, gatewayErrorOf, simpleRequest, textOf } from '../../testing/provider-calls.js';
import { useProviderUnderTest } from '../../testing/provider-under-test.js';
import { toGatewayError } from '../../to-gateway-error.js';
import { AnthropicProvider } from './anthropic-provider.js';

const fixture = (name: string) => providerFixture('anthropic', name);

/**
 * The gateway Usage of Anthropic counts: prompt_tokens is input plus cache reads plus cache writes
 * (Anthropic's input_tokens leaves both out).
 */
function expectedUsage(counts: { input: number; read?: number; written5m?: number; written1h?: number; output: number }) {
  const { input, read = 0, written5m = 0, written1h = 0, output } = counts;
  const prompt = input + read + written5m + written1h;
  return {
    prompt_tokens: prompt,
    completion_tokens: output,
    total_tokens: prompt + output,
    cached_tokens: read,
    reasoning_tokens: 0,
    cache_write_tokens: written5m + written1h,
    cache_write_5m_tokens: written5m,
    cache_write_1h_tokens: written1h,
  };
}

const under = useProviderUnderTest({
  create: (dependencies) => new AnthropicProvider(dependencies),
  modelOf: (baseUrl) => anthropicModel(new URL(baseUrl).origin),
});
const { contextOf } = under;

describe('AnthropicProvider: requests it sends', () => {
  it('posts a Messages API body to /v1/messages with x-api-key and anthropic-version', async () => {
    under.upstream.respond(replayJson(200, fixture('message.json')));
    const request: ChatRequestOutput = {
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'Be brief.', tool_calls: [] },
        {
          role: 'ROLE_USER',
          content: 'parts',
          tool_calls: [],
          parts: {
            parts: [
              { text: 'What is in these images?' },
              { image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
              { image_url: { url: 'https://example.com/cat.jpg', detail: 'low' } },
            ],
          },
        },
        { role: 'ROLE_DEVELOPER', content: 'text', text: 'Use metric units.', tool_calls: [] },
        { role: 'ROLE_USER', content: 'text', text: 'And the weather?', tool_calls: [] },
        {
          role: 'ROLE_ASSISTANT',
          content: 'text',
          text: 'Checking.',
          tool_calls: [
            { id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } },
            { id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '{"timezone":"Europe/Paris"}' } },
          ],
        },
        { role: 'ROLE_TOOL', content: 'text', text: '{"temperature":21}', tool_call_id: 'toolu_1', tool_calls: [] },
        { role: 'ROLE_TOOL', content: 'text', text: '14:05', tool_call_id: 'toolu_2', tool_calls: [] },
        { role: 'ROLE_USER', content: 'text', text: 'Thanks, summarize.', tool_calls: [] },
      ],
      temperature: 0.2,
      top_p: 0.9,
      stop: ['END', 'STOP'],
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather now',
            parameters_json: '{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}',
          },
        },
        { type: 'function', function: { name: 'get_time' } },
      ],
      tool_choice: { choice: 'mode', mode: 'required' },
      parallel_tool_calls: false,
      user: 'user-42',
      seed: 7,
      presence_penalty: 0.5,
      metadata: { team: 'search' },
    };
    await under.provider.complete(request, contextOf());
    const received = under.upstream.requests[0];
    expect(received?.method).toBe('POST');
    expect(received?.path).toBe('/v1/messages');
    expect(received?.headers['x-api-key']).toBe(PROVIDER_TEST_KEY);
    expect(received?.headers['anthropic-version']).toBe('2023-06-01');
    expect(received?.headers['anthropic-beta']).toBe('fine-grained-tool-streaming-2025-05-14');
    expect(received?.headers.authorization).toBeUndefined();
    expect(received?.body).toEqual({
      model: 'claude-sonnet-4-20250514',
      max_tokens: 64_000,
      system: 'Be brief.\n\nUse metric units.',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in these images?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'text', text: 'And the weather?' },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Paris' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: { timezone: 'Europe/Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '{"temperature":21}' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: '14:05' },
            { type: 'text', text: 'Thanks, summarize.' },
          ],
        },
      ],
      stop_sequences: ['END', 'STOP'],
      temperature: 0.2,
      top_p: 0.9,
      tools: [
        {
          name: 'get_weather',
          description: 'Weather now',
          input_schema: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
        },
        { name: 'get_time', input_schema: { type: 'object', properties: {} } },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      metadata: { user_id: 'user-42' },
    });
  });

  it("uses the caller's max_tokens, maps each tool_choice, and asks for a stream only on streams", async () => {
    under.upstream.respond(replayJson(200, fixture('message.json')));
    const tools = [{ type: 'function', function: { name: 'get_weather' } }];
    await under.provider.complete(simpleRequest({ max_tokens: 50, tools, tool_choice: { choice: 'mode', mode: 'auto' } }), contextOf());
    await under.provider.complete(simpleRequest({ tools, tool_choice: { choice: 'mode', mode: 'none' } }), contextOf());
    await under.provider.complete(simpleRequest({ tools, tool_choice: { choice: 'function_name', function_name: 'get_weather' } }), contextOf());
    expect(under.upstream.requests.map((received) => [received.body.max_tokens, received.body.tool_choice])).toEqual([
      [50, { type: 'auto' }],
      [64_000, { type: 'none' }],
      [64_000, { type: 'tool', name: 'get_weather' }],
    ]);
    expect(under.upstream.requests[0]?.body).not.toHaveProperty('stream');
    await under.streamWith(replaySse(fixture('stream-text.sse')));
    expect(under.upstream.requests[3]?.body).toMatchObject({ stream: true, messages: [{ role: 'user', content: 'Hello!' }] });
    expect(under.upstream.requests[3]?.headers.accept).toBe('text/event-stream');
  });

  it('refuses tool-call arguments that are not a JSON object before calling the upstream', async () => {
    const request = simpleRequest({
      messages: [
        { role: 'ROLE_USER', content: 'text', text: 'Hi', tool_calls: [] },
        { role: 'ROLE_ASSISTANT', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{"location": "Par' } }] },
      ],
    });
    await under.expectRefusedBeforeCall(request, 'messages[1].tool_calls[0].function.arguments', 'invalid_request');
  });
});

describe('AnthropicProvider: whole responses', () => {
  it('joins text blocks and reports cache reads as cached prompt tokens', async () => {
    const response = await under.completeWith(replayJson(200, fixture('message.json')));
    expect(response).toMatchObject({
      id: 'chatcmpl-msg_013Zva2CMHLNnXjNJJKqJ2EF',
      model: under.model.id,
      choices: [{ index: 0, finish_reason: 'FINISH_REASON_STOP', message: { content: 'Hi! My name is Claude. How can I help you today?', tool_calls: [] } }],
      usage: { prompt_tokens: 12 + 100 + 2048, completion_tokens: 15, total_tokens: 12 + 100 + 2048 + 15, cached_tokens: 2048, reasoning_tokens: 0 },
    });
  });

  it('counts cache writes in prompt_tokens, apart from reads, with their 5-minute and 1-hour split', async () => {
    under.upstream.respond(replayJson(200, fixture('message-cache-write.json')));
    const response = await under.provider.complete(simpleRequest(), contextOf());
    expect(response.usage).toEqual(expectedUsage({ input: 10_000, read: 120_000, written5m: 50_000, written1h: 8_000, output: 2_000 }));
  });

  it('counts cache writes reported without their split as 5-minute writes', async () => {
    under.upstream.respond(replayJson(200, fixture('message.json')));
    const response = await under.provider.complete(simpleRequest(), contextOf());
    expect(response.usage).toMatchObject({ cache_write_tokens: 100, cache_write_5m_tokens: 100, cache_write_1h_tokens: 0 });
  });

  it('turns tool_use blocks into tool calls with JSON-string arguments', async () => {
    const response = await under.completeWith(replayJson(200, fixture('message-tool-use.json')));
    const choice = response.choices?.[0];
    expect(choice?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(choice?.message?.content).toBe("I'll check the current weather in San Francisco for you.");
    expect(choice?.message?.tool_calls).toEqual([
      {
        id: 'toolu_01A09q90qw90lq917835lq9',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"location":"San Francisco, CA","unit":"celsius"}' },
      },
    ]);
  });

  it('maps max_tokens to length and refusal to content_filter', async () => {
    const message = JSON.parse(fixture('message.json')) as Record<string, unknown>;
    expect((await under.completeWith(replayJson(200, JSON.stringify({ ...message, stop_reason: 'max_tokens' })))).choices?.[0]?.finish_reason).toBe(
      'FINISH_REASON_LENGTH',
    );
    expect((await under.completeWith(replayJson(200, JSON.stringify({ ...message, stop_reason: 'refusal' })))).choices?.[0]?.finish_reason).toBe(
      'FINISH_REASON_CONTENT_FILTER',
    );
  });
  it('answers a request for logprobs without them (logprobs null), whole and streamed, and does not forward the fields', async () => {
    await under.expectAnswersWithoutLogprobs({
      whole: replayJson(200, fixture('message.json')),
      stream: replaySse(fixture('stream-text.sse')),
    });
  });
});

describe('AnthropicProvider: streams', () => {
  it('streams text as OpenAI chunks: role first, content deltas, the finish reason, then the usage', async () => {
    const events = await under.streamWith(replaySse(fixture('stream-text.sse')));
    const chunks = chunksOf(events);
    expect(chunks[0]?.choices?.[0]?.delta).toMatchObject({ role: 'ROLE_ASSISTANT', content: '' });
    expect(chunks.every((chunk) => chunk.id === 'chatcmpl-msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY' && chunk.model === under.model.id)).toBe(true);
    expect(textOf(chunks)).toBe('Hello! How can I help?');
    expect(
      chunks.filter((chunk) => chunk.choices?.[0]?.finish_reason !== 'FINISH_REASON_UNSPECIFIED').map((chunk) => chunk.choices?.[0]?.finish_reason),
    ).toEqual(['FINISH_REASON_STOP']);
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: expectedUsage({ input: 25, read: 1024, output: 8 }),
    });
  });

  it("keeps message_start's cache-write split when message_delta restates the counts without it", async () => {
    const events = await under.streamWith(replaySse(fixture('stream-cache-write.sse')));
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: expectedUsage({ input: 40, read: 4096, written5m: 1000, written1h: 2000, output: 6 }),
    });
  });

  it('streams tool_use blocks as OpenAI tool-call deltas whose fragments reassemble to the arguments', async () => {
    const events = await under.streamWith(replaySse(fixture('stream-tool-use.sse')));
    const chunks = chunksOf(events);
    expect(textOf(chunks)).toBe('Okay, let me check the weather.');
    const deltas = chunks.flatMap((chunk) => chunk.choices?.[0]?.delta?.tool_calls ?? []);
    expect(deltas[0]).toEqual({ index: 0, id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(deltas[1]).toEqual({ index: 0, function: { arguments: '{"location":' } });
    // id, type and name only on the first delta of each call.
    for (const index of [0, 1, 2]) {
      const ofCall = deltas.filter((delta) => delta.index === index);
      expect(ofCall.filter((delta) => delta.id !== undefined || delta.function?.name !== undefined)).toHaveLength(1);
    }
    const argumentsOf = (index: number) =>
      deltas
        .filter((delta) => delta.index === index)
        .map((delta) => delta.function?.arguments ?? '')
        .join('');
    expect(JSON.parse(argumentsOf(0))).toEqual({ location: 'San Francisco, CA', unit: 'fahrenheit' });
    expect(JSON.parse(argumentsOf(1))).toEqual({ timezone: 'America/Los_Angeles' });
    expect(argumentsOf(2)).toBe('{}');
    expect(deltas.filter((delta) => delta.id).map((delta) => delta.function?.name)).toEqual(['get_weather', 'get_time', 'list_alerts']);
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: expectedUsage({ input: 472, output: 89 }),
    });
  });

  it('fails a stream that ends without message_stop as truncated, after the chunks it got', async () => {
    for (const responder of [
      replayRaw(200, fixture('stream-truncated.sse')),
      replaySse(fixture('stream-text.sse').split('event: message_stop')[0] as string),
    ]) {
      const { events: received, failure } = await under.drainWith(responder);
      expect(failure).toMatchObject({ kind: 'truncated', retryable: true });
      expect(received.length).toBeGreaterThan(0);
      expect(received.every((event) => event.type === 'chunk')).toBe(true);
      expect(toGatewayError(failure)).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error', provider: 'anthropic' });
    }
  });

  it('fails on an overloaded error event mid-stream as retryable, and on an event that is not JSON', async () => {
    const { events: received, failure } = await under.drainWith(replaySse(fixture('stream-error.sse')));
    expect(failure).toMatchObject({ kind: 'stream_error', status: 529, retryable: true });
    expect(textOf(chunksOf(received))).toBe('Let me think');
    expect(toGatewayError(failure)).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error', retryable: true });
    expect(
      await gatewayErrorOf(
        under.streamWith(replaySse('event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":\n\n')),
      ),
    ).toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      reason: 'upstream_error',
    });
  });
});

describe('AnthropicProvider: upstream failures', () => {
  it('maps 400 to INVALID_ARGUMENT with the upstream message, scrubbed of our key', async () => {
    await under.expectInvalidRequest(replayJson(400, fixture('error-400.json')), 'roles must alternate');
    const echoed = { type: 'error', error: { type: 'invalid_request_error', message: `bad key ${PROVIDER_TEST_KEY}` } };
    await under.expectKeyRedacted(replayJson(400, JSON.stringify(echoed)), PROVIDER_TEST_KEY);
  });

  it('maps 401 to FAILED_PRECONDITION without the upstream message', async () => {
    const error = await under.failureOf(replayJson(401, fixture('error-401.json')));
    expect(error).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', retryable: false, upstreamStatus: 401 });
    expect(error.message).not.toContain('x-api-key');
  });

  it('maps 429 to RESOURCE_EXHAUSTED with its retry-after, whole and streamed', async () => {
    await under.expectRateLimited(replayJson(429, fixture('error-429.json'), { 'retry-after': '7' }), 7000);
    await under.expectRateLimited(replayJson(429, fixture('error-429.json'), { 'retry-after': '3' }), 3000, 'stream');
  });

  it('maps 500, 529 overloaded and a malformed body to retryable UNAVAILABLE', async () => {
    await under.expectServerFailuresRetryable(
      [
        [500, fixture('error-500.json')],
        [529, fixture('error-529.json')],
      ],
      fixture('malformed.txt'),
    );
  });

  it('maps a first-byte timeout to DEADLINE_EXCEEDED', async () => {
    await under.expectFirstByteTimeout();
  });
});

describe('AnthropicProvider: cancellation', () => {
  it('closes the upstream connection promptly when a stream is aborted', () =>
    under.expectStreamAbortClosesUpstream(replaySse(fixture('stream-text.sse'), { delayMs: 5_000, end: false })));

  it('closes the upstream connection when a whole request is aborted before the answer', () => under.expectWholeAbortClosesUpstream());
});

import { beforeAll, describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import type { ChatRequestOutput } from '@gateway/proto';
import { replayJson, replaySse, startFakeUpstream, catalogOf, openAiCompatibleModel, TEST_KEY, TEST_KEY_ENV, fixture } from '@gateway/testing';
import { chunksOf, gatewayErrorOf, simpleRequest, textOf } from '../../testing/provider-calls.js';
import { expectRetryableUnavailable, useProviderUnderTest } from '../../testing/provider-under-test.js';
import type { ProviderStreamEvent } from '../provider.js';
import { OpenAiCompatibleProvider } from './openai-compatible-provider.js';

const under = useProviderUnderTest({
  environment: { [TEST_KEY_ENV]: TEST_KEY },
  create: (dependencies) => new OpenAiCompatibleProvider(dependencies),
  modelOf: (baseUrl) => openAiCompatibleModel(baseUrl),
});
const { contextOf } = under;

beforeAll(() => {
  expect(catalogOf([under.model]).byId.get(under.model.id)).toBe(under.model);
});

/** Sampling fields of a chat request, which reach the upstream as they are. */
const SAMPLING = { temperature: 0.2, top_p: 0.9, n: 2, stop: ['END'], presence_penalty: 0.1, frequency_penalty: 0.3, seed: 1234 };

describe('OpenAiCompatibleProvider: requests it sends', () => {
  it('translates every field of the chat request to OpenAI JSON, with the key from the named variable', async () => {
    under.upstream.respond(replayJson(200, fixture('chat-completion.json')));
    const request: ChatRequestOutput = {
      model: 'auto',
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'Be brief.', tool_calls: [] },
        { role: 'ROLE_DEVELOPER', content: 'text', text: 'Use metric units.', tool_calls: [] },
        {
          role: 'ROLE_USER',
          content: 'parts',
          name: 'ada',
          tool_calls: [],
          parts: { parts: [{ text: 'What is in this image?' }, { image_url: { url: 'https://example.com/cat.png', detail: 'low' } }] },
        },
        {
          role: 'ROLE_ASSISTANT',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_current_weather', arguments: '{"location":"Paris"}' } }],
        },
        { role: 'ROLE_TOOL', content: 'text', text: '{"temperature":21}', tool_call_id: 'call_1', tool_calls: [] },
      ],
      ...SAMPLING,
      max_tokens: 256,
      max_tokens_is_completion_tokens: true,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_current_weather',
            description: 'Weather now',
            parameters_json: '{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}',
            strict: true,
          },
        },
      ],
      tool_choice: { choice: 'function_name', function_name: 'get_current_weather' },
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema_json: '{"type":"object"}', strict: true } },
      user: 'user-42',
      metadata: { team: 'search' },
      logit_bias: { '50256': -100 },
      reasoning_effort: 'low',
      service_tier: 'auto',
    };
    await under.provider.complete(request, contextOf());
    const received = under.upstream.requests[0];
    expect(received?.method).toBe('POST');
    expect(received?.path).toBe('/v1/chat/completions');
    expect(received?.headers.authorization).toBe(`Bearer ${TEST_KEY}`);
    expect(received?.headers['content-type']).toBe('application/json');
    expect(received?.headers['x-team']).toBe('gateway');
    expect(received?.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: 'Use metric units.' },
        {
          role: 'user',
          name: 'ada',
          content: [
            { type: 'text', text: 'What is in this image?' },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_current_weather', arguments: '{"location":"Paris"}' } }],
        },
        { role: 'tool', content: '{"temperature":21}', tool_call_id: 'call_1' },
      ],
      ...SAMPLING,
      max_completion_tokens: 256,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_current_weather',
            description: 'Weather now',
            parameters: { type: 'object', properties: { location: { type: 'string' } }, required: ['location'] },
            strict: true,
          },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'get_current_weather' } },
      parallel_tool_calls: false,
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
      user: 'user-42',
      logit_bias: { '50256': -100 },
      reasoning_effort: 'low',
      service_tier: 'auto',
    });
  });

  it('sends max_tokens as the caller named it, and stream options on streams only', async () => {
    under.upstream.respond(replayJson(200, fixture('chat-completion.json')));
    await under.provider.complete(
      simpleRequest({ max_tokens: 50, tool_choice: { choice: 'mode', mode: 'auto' }, response_format: { type: 'json_object' } }),
      contextOf(),
    );
    const body = under.upstream.requests[0]?.body;
    expect(body).toMatchObject({ max_tokens: 50, tool_choice: 'auto', response_format: { type: 'json_object' } });
    expect(body).not.toHaveProperty('max_completion_tokens');
    expect(body).not.toHaveProperty('stream');
    expect(body).not.toHaveProperty('stream_options');
    await under.streamWith(replaySse(fixture('stream-text.sse')));
    expect(under.upstream.requests[1]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(under.upstream.requests[1]?.headers.accept).toBe('text/event-stream');
  });
});

describe('OpenAiCompatibleProvider: whole responses', () => {
  it('translates a text response with cached and reasoning tokens', async () => {
    const response = await under.completeWith(replayJson(200, fixture('chat-completion.json')));
    expect(response).toEqual({
      id: 'chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT',
      created: 1741569952,
      model: under.model.id,
      system_fingerprint: 'fp_fc9f1d7035',
      choices: [{ index: 0, finish_reason: 'FINISH_REASON_STOP', message: { content: 'Hello! How can I assist you today?', tool_calls: [] } }],
      usage: { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29, cached_tokens: 6, reasoning_tokens: 3 },
    });
  });

  it('translates a response that calls a function', async () => {
    const response = await under.completeWith(replayJson(200, fixture('chat-completion-tool-calls.json')));
    const choice = response.choices?.[0];
    expect(choice?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(choice?.message?.content).toBeUndefined();
    expect(choice?.message?.tool_calls).toEqual([
      { id: 'call_abc123', type: 'function', function: { name: 'get_current_weather', arguments: '{\n"location": "Boston, MA"\n}' } },
    ]);
    expect(response.usage).toEqual({ prompt_tokens: 82, completion_tokens: 17, total_tokens: 99, cached_tokens: 0, reasoning_tokens: 0 });
  });
});

describe('OpenAiCompatibleProvider: log probabilities', () => {
  const published = JSON.parse(fixture('chat-completion-logprobs.json')) as {
    choices: Array<{
      message: { content: string };
      logprobs: {
        content: Array<{
          token: string;
          logprob: number;
          bytes: number[] | null;
          top_logprobs: Array<{ token: string; logprob: number; bytes: number[] | null }>;
        }>;
      };
    }>;
  };
  const upstreamTokens = published.choices[0]!.logprobs.content;

  it('asks the upstream for logprobs and top_logprobs as the caller did', async () => {
    await under.completeWith(replayJson(200, fixture('chat-completion-logprobs.json')), simpleRequest({ logprobs: true, top_logprobs: 2 }));
    expect(under.upstream.requests[0]?.body).toMatchObject({ logprobs: true, top_logprobs: 2 });
  });

  it('carries every token of a whole response with its log probability, bytes and alternatives', async () => {
    const response = await under.completeWith(replayJson(200, fixture('chat-completion-logprobs.json')), simpleRequest({ logprobs: true, top_logprobs: 2 }));
    const logprobs = response.choices?.[0]?.logprobs;
    expect(logprobs?.refusal).toBeUndefined();
    const tokens = logprobs?.content?.tokens ?? [];
    expect(tokens.map((token) => token.token).join('')).toBe(response.choices?.[0]?.message?.content);
    expect(tokens[0]).toEqual({
      token: 'Hello',
      logprob: -0.31725305,
      bytes: [72, 101, 108, 108, 111],
      top_logprobs: [
        { token: 'Hello', logprob: -0.31725305, bytes: [72, 101, 108, 108, 111] },
        { token: 'Hi', logprob: -1.3190403, bytes: [72, 105] },
      ],
    });
    expect(tokens.map((token) => token.logprob)).toEqual(upstreamTokens.map((token) => token.logprob));
    // The special token has no byte representation (`bytes: null`): an empty list, written back as null by the edge.
    expect(tokens[2]?.top_logprobs?.[1]).toEqual({ token: '<|end|>', logprob: -10.953937, bytes: [] });
  });

  it("carries each stream chunk's token log probabilities, an empty list on the role chunk and none on the finish chunk", async () => {
    const chunks = chunksOf(await under.streamWith(replaySse(fixture('stream-logprobs.sse')), simpleRequest({ logprobs: true, top_logprobs: 2 })));
    expect(chunks[0]?.choices?.[0]?.logprobs).toEqual({ content: { tokens: [] } });
    expect(chunks.at(-1)?.choices?.[0]?.logprobs).toBeUndefined();
    const tokens = chunks.flatMap((chunk) => chunk.choices?.[0]?.logprobs?.content?.tokens ?? []);
    expect(tokens.map((token) => token.token)).toEqual(upstreamTokens.map((token) => token.token));
    for (const chunk of chunks.slice(1, -1)) {
      const choice = chunk.choices?.[0];
      expect(choice?.logprobs?.content?.tokens?.map((token) => token.token).join('')).toBe(choice?.delta?.content);
    }
    expect(tokens[1]).toEqual({
      token: '!',
      logprob: -0.02380986,
      bytes: [33],
      top_logprobs: [
        { token: '!', logprob: -0.02380986, bytes: [33] },
        { token: ' there', logprob: -3.787621, bytes: [32, 116, 104, 101, 114, 101] },
      ],
    });
  });

  it('leaves logprobs absent when the upstream sends null', async () => {
    expect((await under.completeWith(replayJson(200, fixture('chat-completion.json')))).choices?.[0]).not.toHaveProperty('logprobs');
    const chunks = chunksOf(await under.streamWith(replaySse(fixture('stream-text.sse'))));
    expect(chunks.every((chunk) => chunk.choices?.every((choice) => !('logprobs' in choice)))).toBe(true);
  });
});

describe('OpenAiCompatibleProvider: streams', () => {
  it('forwards one chunk per upstream chunk and ends with the usage chunk as usage', async () => {
    const events = await under.streamWith(replaySse(fixture('stream-text.sse')));
    const chunks = chunksOf(events);
    expect(chunks).toHaveLength(5);
    expect(chunks.every((chunk) => chunk.id === 'chatcmpl-123' && chunk.model === under.model.id && chunk.created === 1694268190)).toBe(true);
    expect(chunks[0]?.choices?.[0]?.delta?.role).toBe('ROLE_ASSISTANT');
    expect(textOf(chunks)).toBe('Hello! How can I help?');
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_STOP');
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18, cached_tokens: 0, reasoning_tokens: 0 },
    });
  });

  it('yields the usage at [DONE] without waiting for the response to end, then ends with it and keeps the connection', async () => {
    let endedAt = 0;
    under.upstream.respond(async (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(fixture('stream-text.sse'));
      await new Promise((resolve) => setTimeout(resolve, 300));
      endedAt = performance.now();
      response.end();
    });
    const iterator = under.provider.stream(simpleRequest(), contextOf())[Symbol.asyncIterator]();
    let event = await iterator.next();
    while (!event.done && event.value.type !== 'usage') event = await iterator.next();
    const usageAt = performance.now();
    expect(event.value).toMatchObject({ type: 'usage', usage: { total_tokens: 18 } });
    expect(endedAt).toBe(0);
    expect((await iterator.next()).done).toBe(true);
    expect(performance.now()).toBeGreaterThanOrEqual(usageAt + 250);
    expect(endedAt).toBeGreaterThan(0);
    await under.upstream.requests[0]!.closed;
    expect(under.upstream.requests[0]!.finished).toBe(true);
  });

  it('forwards tool-call fragments that reassemble to the calls', async () => {
    const events = await under.streamWith(replaySse(fixture('stream-tool-calls.sse')));
    const deltas = chunksOf(events).flatMap((chunk) => chunk.choices?.[0]?.delta?.tool_calls ?? []);
    expect(deltas[0]).toEqual({ index: 0, id: 'call_DdmO9pD3xa9XTPNJ32zg2hcA', type: 'function', function: { name: 'get_current_weather', arguments: '' } });
    expect(deltas[1]).toEqual({ index: 0, function: { arguments: '{"lo' } });
    const argumentsOf = (index: number) =>
      deltas
        .filter((delta) => delta.index === index)
        .map((delta) => delta.function?.arguments ?? '')
        .join('');
    expect(JSON.parse(argumentsOf(0))).toEqual({ location: 'Boston, MA' });
    expect(JSON.parse(argumentsOf(1))).toEqual({ timezone: 'America/New_York' });
    expect(chunksOf(events).at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: { prompt_tokens: 82, completion_tokens: 31, total_tokens: 113, cached_tokens: 64, reasoning_tokens: 0 },
    });
  });

  it('counts the usage itself when the upstream sends no usage chunk', async () => {
    const withoutUsage = fixture('stream-text.sse')
      .split('\n\n')
      .filter((event) => !event.includes('"usage":{'))
      .join('\n\n');
    const events = await under.streamWith(replaySse(withoutUsage));
    const last = events.at(-1);
    expect(last?.type).toBe('usage');
    expect(last?.type === 'usage' && last.usage.completion_tokens).toBeGreaterThan(0);
  });

  it('fails a truncated stream as an upstream error after the chunks it got', async () => {
    under.upstream.respond(replaySse(fixture('stream-truncated.sse')));
    const received: ProviderStreamEvent[] = [];
    const error = await gatewayErrorOf(
      (async () => {
        for await (const event of under.provider.stream(simpleRequest(), contextOf())) received.push(event);
      })(),
    );
    expect(received).toHaveLength(2);
    expect(error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error', retryable: true, provider: 'openai-compatible' });
  });

  it('fails on an error record inside a 200 stream and on an event that is not JSON', async () => {
    expect(
      await gatewayErrorOf(under.streamWith(replaySse('data: {"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}\n\n'))),
    ).toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      reason: 'upstream_error',
    });
    expect(await under.failureOf(replaySse('data: {"id":"x","choices":[{"index\n\n'), 'stream')).toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      reason: 'upstream_error',
    });
  });
});

describe('OpenAiCompatibleProvider: upstream failures', () => {
  it('maps 400 to INVALID_ARGUMENT with the upstream message, scrubbed of our key', async () => {
    await under.expectInvalidRequest(replayJson(400, fixture('error-400.json')), "Invalid value for 'temperature': must be between 0 and 2.");
    const echoed = { error: { message: `bad key ${TEST_KEY} in field`, type: 'invalid_request_error', param: null, code: null } };
    expect((await under.expectKeyRedacted(replayJson(422, JSON.stringify(echoed)), TEST_KEY)).code).toBe(GrpcStatus.INVALID_ARGUMENT);
  });

  it('maps 401, 403 and 404 to FAILED_PRECONDITION with a general message', async () => {
    for (const status of [401, 403, 404]) {
      const error = await under.failureOf(replayJson(status, fixture('error-401.json')));
      expect(error).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', retryable: false, upstreamStatus: status });
      expect(error.message).not.toContain('sk-');
      expect(error.message).not.toContain('Incorrect API key');
    }
  });

  it('maps 429 to RESOURCE_EXHAUSTED with retry-after or retry-after-ms', async () => {
    await under.expectRateLimited(replayJson(429, fixture('error-429.json'), { 'retry-after': '2' }), 2000);
    await under.expectRateLimited(replayJson(429, fixture('error-429.json'), { 'retry-after': '2', 'retry-after-ms': '120' }), 120, 'stream');
  });

  it('maps 500, a malformed body and a refused connection to retryable UNAVAILABLE', async () => {
    await under.expectServerFailuresRetryable([[500, fixture('error-500.json')]], fixture('malformed.txt'));
    const closed = await startFakeUpstream(replayJson(200, fixture('chat-completion.json')));
    const baseUrl = closed.baseUrl;
    await closed.close();
    await expectRetryableUnavailable(gatewayErrorOf(under.provider.complete(simpleRequest(), contextOf(undefined, openAiCompatibleModel(baseUrl)))));
  });

  it('maps a first-byte timeout and an idle stream to DEADLINE_EXCEEDED', async () => {
    await under.expectFirstByteTimeout();
    const firstEvent = fixture('stream-text.sse').split('\n\n')[0] as string;
    under.upstream.respond(replaySse(`${firstEvent}\n\n`, { end: false }));
    const received: ProviderStreamEvent[] = [];
    const error = await gatewayErrorOf(
      (async () => {
        for await (const event of under.provider.stream(simpleRequest(), contextOf())) received.push(event);
      })(),
    );
    expect(error).toMatchObject({ code: GrpcStatus.DEADLINE_EXCEEDED, reason: 'upstream_timeout' });
    expect(received).toHaveLength(1);
  });
});

describe('OpenAiCompatibleProvider: cancellation', () => {
  it('closes the upstream connection promptly when a stream is aborted', () =>
    under.expectStreamAbortClosesUpstream(replaySse(fixture('stream-text.sse'), { delayMs: 5_000, end: false })));

  it('closes the upstream connection when a whole request is aborted before the answer', () => under.expectWholeAbortClosesUpstream());

  it('releases the connection when the caller stops reading early', () =>
    under.expectEarlyLeaveReleasesUpstream(replaySse(fixture('stream-text.sse'), { delayMs: 5_000, end: false })));
});

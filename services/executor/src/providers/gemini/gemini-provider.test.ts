import { describe, expect, it } from 'vitest';
import { GrpcStatus } from '@gateway/grpc';
import type { ChatRequestOutput } from '@gateway/proto';
import { replayJson, replayRaw, replaySse, geminiModel, PROVIDER_TEST_KEY, providerFixture } from '@gateway/testing';
import { chunksOf, gatewayErrorOf, simpleRequest, textOf } from '../../testing/provider-calls.js';
import { useProviderUnderTest } from '../../testing/provider-under-test.js';
import { toGatewayError } from '../../to-gateway-error.js';
import { GeminiProvider } from './gemini-provider.js';

const fixture = (name: string) => providerFixture('gemini', name);

const under = useProviderUnderTest({
  create: (dependencies) => new GeminiProvider(dependencies),
  modelOf: (baseUrl) => geminiModel(new URL(baseUrl).origin),
});
const { contextOf } = under;

describe('GeminiProvider: requests it sends', () => {
  it('posts a generateContent body with the key in x-goog-api-key, never in the URL', async () => {
    under.upstream.respond(replayJson(200, fixture('generate-content.json')));
    const request: ChatRequestOutput = {
      messages: [
        { role: 'ROLE_SYSTEM', content: 'text', text: 'Be brief.', tool_calls: [] },
        { role: 'ROLE_DEVELOPER', content: 'text', text: 'Use metric units.', tool_calls: [] },
        {
          role: 'ROLE_USER',
          content: 'parts',
          tool_calls: [],
          parts: {
            parts: [
              { text: 'What is in these images?' },
              { image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
              { image_url: { url: 'https://example.com/photos/cat.JPG?size=large' } },
            ],
          },
        },
        { role: 'ROLE_USER', content: 'text', text: 'And the weather in Boston?', tool_calls: [] },
        {
          role: 'ROLE_ASSISTANT',
          content: 'text',
          text: 'Checking.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Boston, MA"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '' } },
          ],
        },
        { role: 'ROLE_TOOL', content: 'text', text: '{"temperature":21}', tool_call_id: 'call_1', tool_calls: [] },
        { role: 'ROLE_TOOL', content: 'text', text: '14:05', tool_call_id: 'call_2', tool_calls: [] },
      ],
      temperature: 0.2,
      top_p: 0.9,
      n: 2,
      max_tokens: 256,
      stop: ['END'],
      seed: 42,
      presence_penalty: 0.1,
      frequency_penalty: 0.3,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'Weather now',
            parameters_json: JSON.stringify({
              $schema: 'https://json-schema.org/draft/2020-12/schema',
              type: 'object',
              additionalProperties: false,
              properties: {
                location: { type: 'string', description: 'City and state' },
                unit: { type: ['string', 'null'], enum: ['celsius', 'fahrenheit', null] },
                days: { type: 'integer', minimum: 1, exclusiveMaximum: 15, multipleOf: 1 },
                when: { $ref: '#/$defs/moment' },
              },
              required: ['location'],
              $defs: { moment: { type: 'string', format: 'date-time' } },
            }),
          },
        },
        { type: 'function', function: { name: 'get_time', parameters_json: '{"type":"object","properties":{}}' } },
      ],
      tool_choice: { choice: 'function_name', function_name: 'get_weather' },
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'answer',
          schema_json: '{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}',
        },
      },
      user: 'user-42',
      logit_bias: { '50256': -100 },
    };
    await under.provider.complete(request, contextOf());
    const received = under.upstream.requests[0];
    expect(received?.method).toBe('POST');
    expect(received?.path).toBe('/v1beta/models/gemini-2.0-flash:generateContent');
    expect(received?.headers['x-goog-api-key']).toBe(PROVIDER_TEST_KEY);
    expect(received?.path).not.toContain(PROVIDER_TEST_KEY);
    expect(received?.body).toEqual({
      systemInstruction: { parts: [{ text: 'Be brief.' }, { text: 'Use metric units.' }] },
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'What is in these images?' },
            { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/photos/cat.JPG?size=large' } },
            { text: 'And the weather in Boston?' },
          ],
        },
        {
          role: 'model',
          parts: [
            { text: 'Checking.' },
            { functionCall: { name: 'get_weather', args: { location: 'Boston, MA' } } },
            { functionCall: { name: 'get_time', args: {} } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { name: 'get_weather', response: { temperature: 21 } } },
            { functionResponse: { name: 'get_time', response: { content: '14:05' } } },
          ],
        },
      ],
      tools: [
        {
          functionDeclarations: [
            {
              name: 'get_weather',
              description: 'Weather now',
              parameters: {
                type: 'OBJECT',
                properties: {
                  location: { type: 'STRING', description: 'City and state' },
                  unit: { type: 'STRING', nullable: true, format: 'enum', enum: ['celsius', 'fahrenheit'] },
                  days: { type: 'INTEGER', minimum: 1 },
                  when: { type: 'STRING', format: 'date-time' },
                },
                required: ['location'],
              },
            },
            { name: 'get_time' },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['get_weather'] } },
      generationConfig: {
        temperature: 0.2,
        topP: 0.9,
        maxOutputTokens: 256,
        stopSequences: ['END'],
        candidateCount: 2,
        presencePenalty: 0.1,
        frequencyPenalty: 0.3,
        seed: 42,
        responseMimeType: 'application/json',
        responseSchema: { type: 'OBJECT', properties: { answer: { type: 'STRING' } }, required: ['answer'] },
      },
    });
  });

  it('maps each tool_choice mode, asks for JSON for json_object, and streams with alt=sse', async () => {
    under.upstream.respond(replayJson(200, fixture('generate-content.json')));
    const tools = [{ type: 'function', function: { name: 'get_weather' } }];
    for (const mode of ['auto', 'required', 'none'])
      await under.provider.complete(simpleRequest({ tools, tool_choice: { choice: 'mode', mode } }), contextOf());
    expect(under.upstream.requests.map((received) => received.body.toolConfig)).toEqual([
      { functionCallingConfig: { mode: 'AUTO' } },
      { functionCallingConfig: { mode: 'ANY' } },
      { functionCallingConfig: { mode: 'NONE' } },
    ]);
    await under.provider.complete(simpleRequest({ response_format: { type: 'json_object' } }), contextOf());
    expect(under.upstream.requests[3]?.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'Hello!' }] }],
      generationConfig: { responseMimeType: 'application/json' },
    });
    await under.streamWith(replaySse(fixture('stream-text.sse')));
    expect(under.upstream.requests[4]?.path).toBe('/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse');
    expect(under.upstream.requests[4]?.headers.accept).toBe('text/event-stream');
  });

  it('sends the instructions of a system-only conversation as the user turn, since Gemini refuses empty contents', async () => {
    under.upstream.respond(replayJson(200, fixture('generate-content.json')));
    await under.provider.complete(
      simpleRequest({ messages: [{ role: 'ROLE_SYSTEM', content: 'text', text: 'Name three rivers.', tool_calls: [] }] }),
      contextOf(),
    );
    expect(under.upstream.requests[0]?.body).toEqual({ contents: [{ role: 'user', parts: [{ text: 'Name three rivers.' }] }] });
  });

  it('drops thinking and the thinking blocks of earlier turns, keeping their text and calls', async () => {
    under.upstream.respond(replayJson(200, fixture('generate-content.json')));
    const request = simpleRequest({
      messages: [
        { role: 'ROLE_USER', content: 'text', text: 'Weather?', tool_calls: [] },
        {
          role: 'ROLE_ASSISTANT',
          content: 'parts',
          parts: {
            parts: [
              { thinking: { thinking: 'hmm', signature: 'sig' } },
              { redacted_thinking: { data: 'opaque' } },
              { text: 'Looking.' },
              { tool_call_id: 'c1' },
            ],
          },
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'ROLE_TOOL', content: 'text', text: '{"temp":21}', tool_call_id: 'c1', tool_calls: [] },
      ],
      thinking: { type: 'enabled', budget_tokens: 2048 },
      anthropic_betas: { flags: ['interleaved-thinking-2025-05-14'] },
    });
    await under.provider.complete(request, contextOf());
    const body = under.upstream.requests[0]?.body as { contents: Array<{ role: string; parts: unknown[] }> };
    expect(body.contents[1]).toEqual({ role: 'model', parts: [{ text: 'Looking.' }, { functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] });
    expect(JSON.stringify(body)).not.toMatch(/thinking|signature|opaque|interleaved/);
  });

  it('refuses what cannot be translated before calling the upstream', async () => {
    const cases: Array<[Partial<ChatRequestOutput>, string]> = [
      [
        {
          messages: [
            { role: 'ROLE_USER', content: 'text', text: 'Hi', tool_calls: [] },
            { role: 'ROLE_ASSISTANT', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '["Paris"]' } }] },
          ],
        },
        'messages[1].tool_calls[0].function.arguments',
      ],
      [{ messages: [{ role: 'ROLE_TOOL', content: 'text', text: '21', tool_call_id: 'call_unknown', tool_calls: [] }] }, 'messages[0].tool_call_id'],
      [
        { messages: [{ role: 'ROLE_USER', content: 'parts', tool_calls: [], parts: { parts: [{ image_url: { url: 'https://example.com/render?id=7' } }] } }] },
        'messages[0].content[0].image_url.url',
      ],
    ];
    for (const [extra, param] of cases) await under.expectRefusedBeforeCall(simpleRequest(extra), param);
  });
});

describe('GeminiProvider: whole responses', () => {
  it('drops thought parts, counts thinking tokens as reasoning, and reports cached prompt tokens', async () => {
    const response = await under.completeWith(replayJson(200, fixture('generate-content.json')));
    expect(response).toMatchObject({
      id: 'chatcmpl-mAitaJjJHInWz7IPpv-L0Ak',
      model: under.model.id,
      choices: [{ index: 0, finish_reason: 'FINISH_REASON_STOP', message: { content: 'Hello! How can I help you today?', tool_calls: [] } }],
      usage: { prompt_tokens: 2061, completion_tokens: 39, total_tokens: 2100, cached_tokens: 2048, reasoning_tokens: 30 },
    });
  });

  it('turns functionCall parts into tool calls with stable ids and finish reason tool_calls', async () => {
    const first = await under.completeWith(replayJson(200, fixture('generate-content-function-call.json')));
    const again = await under.provider.complete(simpleRequest(), contextOf());
    const calls = first.choices?.[0]?.message?.tool_calls ?? [];
    expect(first.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(first.choices?.[0]?.message?.content).toBeUndefined();
    expect(calls.map((call) => [call.function?.name, JSON.parse(call.function?.arguments ?? '')])).toEqual([
      ['get_weather', { location: 'Boston, MA', unit: 'celsius' }],
      ['get_time', { timezone: 'America/New_York' }],
    ]);
    expect(calls.every((call) => /^call_[0-9a-f]{24}$/.test(call.id ?? ''))).toBe(true);
    expect(new Set(calls.map((call) => call.id)).size).toBe(2);
    expect(again.choices?.[0]?.message?.tool_calls?.map((call) => call.id)).toEqual(calls.map((call) => call.id));
  });

  it('maps MAX_TOKENS to length, SAFETY to content_filter, and a blocked prompt to a content_filter choice', async () => {
    const body = JSON.parse(fixture('generate-content.json')) as { candidates: Array<Record<string, unknown>> };
    for (const [reason, expected] of [
      ['MAX_TOKENS', 'FINISH_REASON_LENGTH'],
      ['SAFETY', 'FINISH_REASON_CONTENT_FILTER'],
      ['RECITATION', 'FINISH_REASON_CONTENT_FILTER'],
      ['PROHIBITED_CONTENT', 'FINISH_REASON_CONTENT_FILTER'],
    ]) {
      expect(
        (await under.completeWith(replayJson(200, JSON.stringify({ ...body, candidates: [{ ...body.candidates[0], finishReason: reason }] })))).choices?.[0]
          ?.finish_reason,
      ).toBe(expected);
    }
    expect(await under.completeWith(replayJson(200, fixture('blocked-prompt.json')))).toMatchObject({
      choices: [{ index: 0, finish_reason: 'FINISH_REASON_CONTENT_FILTER', message: { tool_calls: [] } }],
      usage: { prompt_tokens: 14, completion_tokens: 0 },
    });
  });
  it('answers a request for logprobs without them (logprobs null), whole and streamed, and does not forward the fields', async () => {
    await under.expectAnswersWithoutLogprobs({
      whole: replayJson(200, fixture('generate-content.json')),
      stream: replaySse(fixture('stream-text.sse')),
    });
  });
});

describe('GeminiProvider: streams', () => {
  it('streams text as OpenAI chunks with a finish chunk and the final cumulative usage', async () => {
    const events = await under.streamWith(replaySse(fixture('stream-text.sse')));
    const chunks = chunksOf(events);
    expect(chunks[0]?.choices?.[0]?.delta).toMatchObject({ role: 'ROLE_ASSISTANT', content: 'Hello' });
    expect(chunks.slice(1).every((chunk) => chunk.choices?.[0]?.delta?.role === undefined)).toBe(true);
    expect(chunks.every((chunk) => chunk.id === 'chatcmpl-4Bq0aOvSEqmV7dcPoLmVmAo' && chunk.model === under.model.id)).toBe(true);
    expect(textOf(chunks)).toBe('Hello! How can I help?');
    expect(chunks.at(-1)?.choices?.[0]).toMatchObject({ finish_reason: 'FINISH_REASON_STOP', delta: { tool_calls: [] } });
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: { prompt_tokens: 1033, completion_tokens: 7, total_tokens: 1040, cached_tokens: 1024, reasoning_tokens: 0 },
    });
  });

  it('reads CRLF-framed events as Google sends them', async () => {
    const events = await under.streamWith(replayRaw(200, fixture('stream-text.sse').replace(/\n/g, '\r\n')));
    expect(textOf(chunksOf(events))).toBe('Hello! How can I help?');
  });

  it('streams each whole function call as one tool-call delta with id, name and complete arguments', async () => {
    const events = await under.streamWith(replaySse(fixture('stream-function-call.sse')));
    const chunks = chunksOf(events);
    const deltas = chunks.flatMap((chunk) => chunk.choices?.[0]?.delta?.tool_calls ?? []);
    expect(deltas).toHaveLength(2);
    expect(deltas.map((delta) => [delta.index, delta.type, delta.function?.name, JSON.parse(delta.function?.arguments ?? '')])).toEqual([
      [0, 'function', 'get_weather', { location: 'Boston, MA', unit: 'celsius' }],
      [1, 'function', 'get_time', { timezone: 'America/New_York' }],
    ]);
    const whole = await under.completeWith(replayJson(200, fixture('generate-content-function-call.json')));
    expect(deltas.map((delta) => delta.id)).toEqual(whole.choices?.[0]?.message?.tool_calls?.map((call) => call.id));
    expect(chunks.at(-1)?.choices?.[0]?.finish_reason).toBe('FINISH_REASON_TOOL_CALLS');
    expect(events.at(-1)).toEqual({
      type: 'usage',
      usage: { prompt_tokens: 82, completion_tokens: 30, total_tokens: 112, cached_tokens: 0, reasoning_tokens: 0 },
    });
  });

  it('fails a stream that ends without a finishReason as truncated, after the chunks it got', async () => {
    for (const responder of [
      replaySse(fixture('stream-truncated.sse')),
      replayRaw(200, `${fixture('stream-truncated.sse')}data: {"candidates": [{"content": {"par`),
    ]) {
      const { events, failure } = await under.drainWith(responder);
      expect(failure).toMatchObject({ kind: 'truncated', retryable: true });
      expect(textOf(chunksOf(events))).toBe('Once upon a time');
      expect(events.every((event) => event.type === 'chunk')).toBe(true);
      expect(toGatewayError(failure)).toMatchObject({ code: GrpcStatus.UNAVAILABLE, reason: 'upstream_error', provider: 'gemini' });
    }
  });

  it('fails on an error record mid-stream as retryable, and on a chunk that is not JSON', async () => {
    const { events, failure } = await under.drainWith(replaySse(fixture('stream-error.sse')));
    expect(textOf(chunksOf(events))).toBe('Let me');
    expect(failure).toMatchObject({ kind: 'stream_error', status: 503, retryable: true });
    expect(await gatewayErrorOf(under.streamWith(replaySse(`${fixture('malformed.txt')}\n\n`)))).toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      reason: 'upstream_error',
      retryable: true,
    });
  });
});

describe('GeminiProvider: upstream failures', () => {
  it('maps 400 INVALID_ARGUMENT to INVALID_ARGUMENT with the upstream message', async () => {
    await under.expectInvalidRequest(replayJson(400, fixture('error-400.json')), 'Unknown name "additionalProperties"');
  });

  it('maps a wrong key (400 API_KEY_INVALID) and 403 to FAILED_PRECONDITION without the upstream message', async () => {
    for (const name of ['error-400-api-key.json', 'error-403.json']) {
      const error = await under.failureOf(replayJson(name === 'error-403.json' ? 403 : 400, fixture(name)));
      expect(error).toMatchObject({ code: GrpcStatus.FAILED_PRECONDITION, reason: 'upstream_rejected', retryable: false });
      expect(error.message).not.toContain('API key');
    }
  });

  it('maps 429 RESOURCE_EXHAUSTED to RESOURCE_EXHAUSTED with the RetryInfo delay, whole and streamed', async () => {
    await under.expectRateLimited(replayJson(429, fixture('error-429.json')), 12_000);
    await under.expectRateLimited(replayJson(429, fixture('error-429.json'), { 'retry-after': '30' }), 12_000, 'stream');
    await under.expectRateLimited(
      replayJson(429, JSON.stringify({ error: { code: 429, message: 'quota', status: 'RESOURCE_EXHAUSTED' } }), { 'retry-after': '3' }),
      3000,
    );
  });

  it('maps 500, 503 UNAVAILABLE and a malformed body to retryable UNAVAILABLE', async () => {
    await under.expectServerFailuresRetryable(
      [
        [500, fixture('error-500.json')],
        [503, fixture('error-503.json')],
      ],
      fixture('malformed.txt'),
    );
  });

  it('maps an idle stream to DEADLINE_EXCEEDED after the chunks it got', async () => {
    const firstEvent = fixture('stream-text.sse').split('\n\n')[0] as string;
    const { events, failure } = await under.drainWith(replaySse(`${firstEvent}\n\n`, { end: false }));
    expect(events).toHaveLength(1);
    expect(toGatewayError(failure)).toMatchObject({ code: GrpcStatus.DEADLINE_EXCEEDED, reason: 'upstream_timeout' });
  });
});

describe('GeminiProvider: cancellation', () => {
  it('closes the upstream connection promptly when a stream is aborted', () =>
    under.expectStreamAbortClosesUpstream(replaySse(fixture('stream-text.sse'), { delayMs: 5_000, end: false })));

  it('releases the connection when the caller stops reading early', () =>
    under.expectEarlyLeaveReleasesUpstream(replaySse(fixture('stream-text.sse'), { delayMs: 5_000, end: false })));
});

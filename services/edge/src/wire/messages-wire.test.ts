/**
 * The answer of a Messages request, whole and streamed: the chat answer and chunks the executor
 * gives, rendered as the `message` object and the event sequence Anthropic publishes, and errors
 * in Anthropic's envelope.
 */
import { describe, expect, it } from 'vitest';
import type { ChatResponseOutput } from '@gateway/proto';
import type { Completion } from '../completions/completion.js';
import { anthropicErrorJson } from './messages-output.js';
import { messagesWire } from './messages-wire.js';
import { parseMessagesRequest } from './parse-messages-request.js';
import { RequestError } from '../request-error.js';
import { answeredCompletion, begunStream, chunk, namedEvents, streamedEvents } from '../testing/wire-streams.js';

/** A completion as the pipeline hands it to the wire once the model answered. */
function completionOf(): Completion {
  return answeredCompletion(parseMessagesRequest({ model: 'sim-full', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }), {
    requestId: 'req_1',
    promptTokens: 9,
  });
}

describe('the Messages wire', () => {
  it('renders a whole answer as a message: text and tool_use blocks, stop reason, usage, the gateway object', () => {
    const response = {
      model: 'sim-full',
      choices: [
        {
          index: 0,
          message: {
            role: 'ROLE_ASSISTANT',
            content: 'Checking.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
          },
          finish_reason: 'FINISH_REASON_TOOL_CALLS',
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 4, cache_write_tokens: 2, cache_write_1h_tokens: 2 },
    } as unknown as ChatResponseOutput;
    const body = JSON.parse(messagesWire.renderWhole(completionOf(), response));
    expect(body).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      type: 'message',
      role: 'assistant',
      model: 'sim-full',
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Oslo' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: 4,
        output_tokens: 5,
        cache_creation_input_tokens: 2,
        cache_read_input_tokens: 4,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 2 },
      },
      gateway: expect.objectContaining({ routed_to: 'sim-full', cost_usd: 0.000003 }),
    });
  });

  it('maps the finish reasons: stop to end_turn, length to max_tokens', () => {
    const answer = (finish: string) =>
      JSON.parse(
        messagesWire.renderWhole(completionOf(), {
          choices: [{ index: 0, message: { content: 'Rivers' }, finish_reason: finish }],
        } as unknown as ChatResponseOutput),
      );
    expect(answer('FINISH_REASON_STOP').stop_reason).toBe('end_turn');
    expect(answer('FINISH_REASON_LENGTH').stop_reason).toBe('max_tokens');
  });

  it('streams text as message_start, one text block with text_delta events, message_delta with usage, message_stop', () => {
    const { stream, head } = begunStream(messagesWire, completionOf());
    expect(head['request-id']).toBe('req_1');
    const list = streamedEvents(stream, [{ role: 'assistant', content: '' }, { content: 'Rivers ' }, { content: 'flow.' }], 'stop', {
      prompt_tokens: 9,
      completion_tokens: 2,
    });
    expect(list.map((event) => event.type)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(list[0]).toMatchObject({
      message: { type: 'message', role: 'assistant', content: [], model: 'sim-full', usage: { input_tokens: 9, output_tokens: 0 } },
    });
    expect(list[2]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(list[3]).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Rivers ' } });
    expect(list[5]).toEqual({ type: 'content_block_stop', index: 0 });
    expect(list[6]).toMatchObject({
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 9, output_tokens: 2 },
      gateway: { routed_to: 'sim-full' },
    });
  });

  it("streams the final usage as Anthropic's: input apart from cache reads and writes", () => {
    const { stream } = begunStream(messagesWire, completionOf());
    const list = streamedEvents(stream, [{ content: 'Cached.' }], 'stop', {
      prompt_tokens: 100,
      completion_tokens: 3,
      cached_tokens: 60,
      cache_write_tokens: 30,
      cache_write_5m_tokens: 30,
    });
    expect(list.find((event) => event.type === 'message_delta')!.usage).toEqual({
      input_tokens: 10,
      output_tokens: 3,
      cache_creation_input_tokens: 30,
      cache_read_input_tokens: 60,
      cache_creation: { ephemeral_5m_input_tokens: 30, ephemeral_1h_input_tokens: 0 },
    });
  });

  it('streams a tool call as a tool_use block with input_json_delta events after the text block, stop_reason tool_use', () => {
    const list = streamedEvents(
      messagesWire.openStream(completionOf()),
      [
        { content: 'Checking.' },
        { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
        { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] },
        { tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } }] },
      ],
      'tool_calls',
      { prompt_tokens: 9, completion_tokens: 7 },
    );
    const blocks = list.filter((event) => event.type.startsWith('content_block'));
    expect(blocks.map((event) => `${event.type}:${event.index}`)).toEqual([
      'content_block_start:0',
      'content_block_delta:0',
      'content_block_stop:0',
      'content_block_start:1',
      'content_block_delta:1',
      'content_block_delta:1',
      'content_block_stop:1',
      'content_block_start:2',
      'content_block_delta:2',
      'content_block_stop:2',
    ]);
    expect(blocks[3]).toMatchObject({ content_block: { type: 'tool_use', id: 'call_1', name: 'get_weather', input: {} } });
    expect(blocks[4]).toMatchObject({ delta: { type: 'input_json_delta', partial_json: '{"city":' } });
    expect(list.at(-2)).toMatchObject({ type: 'message_delta', delta: { stop_reason: 'tool_use' } });
    expect(list.at(-1)).toEqual({ type: 'message_stop' });
  });

  it('renders thinking blocks whole, signed, before the text and the tool uses', () => {
    const response = {
      choices: [
        {
          index: 0,
          message: {
            content: 'Checking.',
            tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
            thinking: { blocks: [{ thinking: { thinking: 'Use the tool.', signature: 'sig-1' } }, { redacted_thinking: { data: 'opaque' } }] },
          },
          finish_reason: 'FINISH_REASON_TOOL_CALLS',
        },
      ],
    } as unknown as ChatResponseOutput;
    expect(JSON.parse(messagesWire.renderWhole(completionOf(), response)).content).toEqual([
      { type: 'thinking', thinking: 'Use the tool.', signature: 'sig-1' },
      { type: 'redacted_thinking', data: 'opaque' },
      { type: 'text', text: 'Checking.' },
      { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} },
    ]);
  });

  it("streams thinking as Anthropic does: a thinking block's thinking_delta and signature_delta events, a redacted block whole, then the text", () => {
    const { stream } = begunStream(messagesWire, completionOf());
    // The chunks as the executor renders them from its chat deltas.
    const rendered = (delta: Record<string, unknown>) => stream.chunkJson({ choices: [{ index: 0, delta: { tool_calls: [], ...delta } }] } as never);
    const deltas = [
      { thinking: 'Two ' },
      { thinking: 'steps.' },
      { thinking_signature: 'sig-1' },
      { thinking: 'More.' },
      { thinking_signature: 'sig-2' },
      { redacted_thinking: 'opaque' },
      { content: 'Done.' },
    ];
    const text = deltas.map((delta) => stream.event(rendered(delta))).join('') + stream.end(chunk({}, 'stop'), undefined);
    const blocks = namedEvents(text).filter((event) => event.type.startsWith('content_block'));
    expect(blocks).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Two ' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'steps.' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig-1' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'thinking', thinking: '', signature: '' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'thinking_delta', thinking: 'More.' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'signature_delta', signature: 'sig-2' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'redacted_thinking', data: 'opaque' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'content_block_start', index: 3, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 3, delta: { type: 'text_delta', text: 'Done.' } },
      { type: 'content_block_stop', index: 3 },
    ]);
  });

  it('ends a stream cut at max_tokens with stop_reason max_tokens, and a failed one with an error event', () => {
    const cut = streamedEvents(messagesWire.openStream(completionOf()), [{ content: 'Rivers' }], 'length');
    expect(cut.at(-2)).toMatchObject({ delta: { stop_reason: 'max_tokens' } });

    const stream = messagesWire.openStream(completionOf());
    const text = stream.event(chunk({ content: 'Rivers' })) + stream.failure(new RequestError(502, 'The upstream failed.', { code: 'upstream_error' }));
    const list = namedEvents(text);
    expect(list.map((event) => event.type)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta', 'error']);
    expect(list.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: 'The upstream failed.' } });
    const overloaded = namedEvents(messagesWire.openStream(completionOf()).failure(new RequestError(503, 'Unavailable.')));
    expect(overloaded.at(-1)).toMatchObject({ error: { type: 'overloaded_error' } });
  });

  it("renders errors in Anthropic's envelope with its types by status", () => {
    const typeOf = (status: number) => JSON.parse(anthropicErrorJson(new RequestError(status, 'x'))).error.type;
    expect(JSON.parse(messagesWire.renderError(new RequestError(400, 'Bad.', { param: 'max_tokens' })))).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: 'Bad.' },
    });
    expect([401, 403, 404, 413, 415, 429, 500, 502, 503].map(typeOf)).toEqual([
      'authentication_error',
      'permission_error',
      'not_found_error',
      'request_too_large',
      'invalid_request_error',
      'rate_limit_error',
      'api_error',
      'api_error',
      'overloaded_error',
    ]);
  });
});

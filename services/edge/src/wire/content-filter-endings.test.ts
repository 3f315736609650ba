/**
 * How each API's stream ends when its last chat chunk finishes with `content_filter` (an answer a
 * guardrail blocked, or a provider's own filter): chat keeps the finish reason on its last chunk
 * with the `gateway` object, Responses ends `response.incomplete` for content_filter, Messages
 * stops with `refusal`.
 */
import { describe, expect, it } from 'vitest';
import type { Completion } from '../completions/completion.js';
import { answeredCompletion, begunStream, chunk, streamedEvents } from '../testing/wire-streams.js';
import { chatCompletionsWire } from './chat-completions-wire.js';
import { messagesWire } from './messages-wire.js';
import { parseChatRequest } from './parse-chat-request.js';
import { parseMessagesRequest } from './parse-messages-request.js';
import { parseResponsesRequest } from './parse-responses-request.js';
import { responsesWire } from './responses-wire.js';
import type { ResponsesCompletion } from './responses-output.js';

describe('a stream that ends with content_filter', () => {
  it('chat: the last chunk keeps finish_reason content_filter and carries the gateway object, then [DONE]', () => {
    const completion = answeredCompletion<Completion>(parseChatRequest({ model: 'sim-full', stream: true, messages: [{ role: 'user', content: 'Hi' }] }), {
      requestId: 'req_1',
    });
    const { stream } = begunStream(chatCompletionsWire, completion);
    const text = stream.event(chunk({ content: 'Partial' })) + stream.end(chunk({}, 'content_filter'), undefined);
    const events = text
      .split('\n\n')
      .filter(Boolean)
      .map((event) => event.slice('data: '.length));
    expect(events.at(-1)).toBe('[DONE]');
    const last = JSON.parse(events.at(-2)!);
    expect(last.choices[0].finish_reason).toBe('content_filter');
    expect(last.gateway.routed_to).toBe('sim-full');
  });

  it('Responses: response.incomplete with incomplete_details.reason content_filter', () => {
    const completion = answeredCompletion<ResponsesCompletion>(parseResponsesRequest({ model: 'sim-full', input: 'Hi' }));
    const { stream } = begunStream(responsesWire, completion);
    const events = streamedEvents(stream, [{ content: 'Partial' }], 'content_filter');
    const last = events.at(-1)!;
    expect(last.type).toBe('response.incomplete');
    expect((last.response as { incomplete_details: unknown }).incomplete_details).toEqual({ reason: 'content_filter' });
    expect(events.map((event) => event.type)).not.toContain('response.completed');
  });

  it('Messages: message_delta with stop_reason refusal, then message_stop', () => {
    const completion = answeredCompletion<Completion>(
      parseMessagesRequest({ model: 'sim-full', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] }),
      {
        requestId: 'req_1',
        promptTokens: 9,
      },
    );
    const { stream } = begunStream(messagesWire, completion);
    const events = streamedEvents(stream, [{ content: 'Partial' }], 'content_filter');
    expect(events.slice(-2).map((event) => event.type)).toEqual(['message_delta', 'message_stop']);
    expect((events.at(-2)!.delta as { stop_reason: string }).stop_reason).toBe('refusal');
  });
});

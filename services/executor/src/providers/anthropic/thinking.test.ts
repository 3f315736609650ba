import { describe, expect, it } from 'vitest';
import type { ChatRequestOutput, MessageOutput } from '@gateway/proto';
import { replayJson, replaySse, anthropicModel, providerFixture } from '@gateway/testing';
import { assistantTurnWithThinking, chunksOf, simpleRequest, THINKING_SIGNATURE } from '../../testing/provider-calls.js';
import { useProviderUnderTest } from '../../testing/provider-under-test.js';
import { AnthropicProvider } from './anthropic-provider.js';

const fixture = (name: string) => providerFixture('anthropic', name);

const under = useProviderUnderTest({
  create: (dependencies) => new AnthropicProvider(dependencies),
  modelOf: (baseUrl) => anthropicModel(new URL(baseUrl).origin),
});
const { contextOf } = under;

/** An earlier assistant turn as the Messages API parses it: thinking, redacted thinking, text, a call, then more text and a call. */
function assistantTurn(): MessageOutput {
  return assistantTurnWithThinking('EmwKAhgBEgy3', 'toolu_1', {
    parts: [{ text: 'And the time.', part: 'text' }],
    toolCalls: [{ id: 'toolu_2', type: 'function', function: { name: 'get_time', arguments: '{}' } }],
  });
}

function thinkingRequest(extra: Partial<ChatRequestOutput> = {}): ChatRequestOutput {
  return simpleRequest({
    messages: [
      { role: 'ROLE_USER', content: 'text', text: 'Weather in Paris?', tool_calls: [] },
      assistantTurn(),
      { role: 'ROLE_TOOL', content: 'text', text: '21C', tool_call_id: 'toolu_1', tool_calls: [] },
      { role: 'ROLE_TOOL', content: 'text', text: '14:05', tool_call_id: 'toolu_2', tool_calls: [] },
    ],
    max_tokens: 4096,
    thinking: { type: 'enabled', budget_tokens: 2048 },
    anthropic_betas: { flags: ['interleaved-thinking-2025-05-14', 'fine-grained-tool-streaming-2025-05-14'] },
    ...extra,
  });
}

describe('AnthropicProvider: extended thinking in requests', () => {
  it('sends thinking, the signed blocks of earlier turns unchanged and in their place, and the betas as anthropic-beta', async () => {
    under.upstream.respond(replayJson(200, fixture('message.json')));
    await under.provider.complete(thinkingRequest(), contextOf());
    const received = under.upstream.requests[0];
    // The catalog's own flag first, each flag once.
    expect(received?.headers['anthropic-beta']).toBe('fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14');
    const body = received?.body as { thinking: unknown; messages: Array<{ role: string; content: unknown }> };
    expect(body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should look it up.', signature: THINKING_SIGNATURE },
        { type: 'redacted_thinking', data: 'EmwKAhgBEgy3' },
        { type: 'text', text: 'Checking.' },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { location: 'Paris' } },
        { type: 'text', text: 'And the time.' },
        { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
      ],
    });
  });

  it('sends adaptive and disabled thinking as they are, sampling as the caller set it, and no beta header of its own without betas', async () => {
    under.upstream.respond(replayJson(200, fixture('message.json')));
    await under.provider.complete(simpleRequest({ thinking: { type: 'adaptive' }, temperature: 0.3 }), contextOf());
    under.upstream.respond(replayJson(200, fixture('message.json')));
    await under.provider.complete(simpleRequest({ thinking: { type: 'disabled' } }), contextOf());
    under.upstream.respond(replayJson(200, fixture('message.json')));
    await under.provider.complete(simpleRequest(), contextOf());
    const [adaptive, disabled, none] = under.upstream.requests;
    expect(adaptive?.body).toMatchObject({ thinking: { type: 'adaptive' }, temperature: 0.3 });
    expect(disabled?.body).toMatchObject({ thinking: { type: 'disabled' } });
    expect(none?.body).not.toHaveProperty('thinking');
    // The catalog's header goes as it is.
    expect(none?.headers['anthropic-beta']).toBe('fine-grained-tool-streaming-2025-05-14');
  });

  it('refuses enabled thinking without a budget before calling the upstream', async () => {
    await under.expectRefusedBeforeCall(simpleRequest({ thinking: { type: 'enabled' } }), 'thinking.budget_tokens', 'invalid_request');
  });
});

describe('AnthropicProvider: extended thinking in answers', () => {
  it('returns the thinking blocks of a whole answer whole, signatures included, apart from the text and the calls', async () => {
    const response = await under.completeWith(replayJson(200, fixture('message-thinking.json')));
    const message = response.choices?.[0]?.message;
    expect(message?.thinking?.blocks).toEqual([
      { thinking: { thinking: 'The user wants the weather in Paris. I should call get_weather.', signature: THINKING_SIGNATURE } },
      { redacted_thinking: { data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' } },
    ]);
    expect(message?.content).toBe('Let me check.');
    expect(message?.tool_calls?.map((call) => call.id)).toEqual(['toolu_01ThinkTool']);
  });

  it('streams thinking as thinking deltas ended by the signature, a redacted block whole, then the text', async () => {
    const events = await under.streamWith(replaySse(fixture('stream-thinking.sse')));
    const deltas = chunksOf(events)
      .map((chunk) => chunk.choices?.[0]?.delta ?? {})
      .filter((delta) => delta.thinking !== undefined || delta.thinking_signature !== undefined || delta.redacted_thinking !== undefined || delta.content);
    expect(
      deltas.map(({ thinking, thinking_signature, redacted_thinking, content }) => ({ thinking, thinking_signature, redacted_thinking, content })),
    ).toEqual([
      { thinking: 'Let me solve this step by step:\n\n1. First break down 27 * 453' },
      { thinking: '\n2. 453 = 400 + 50 + 3' },
      { thinking_signature: THINKING_SIGNATURE },
      { redacted_thinking: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP' },
      { content: '27 * 453 = 12,231' },
    ]);
  });

  it('gives a signature that came with the block start when the block stops', async () => {
    const sse = fixture('stream-thinking.sse')
      .replace('"thinking":"","signature":""', `"thinking":"Quick.","signature":"${THINKING_SIGNATURE}"`)
      .replace(/event: content_block_delta\ndata: \{[^\n]*signature_delta[^\n]*\n\n/, '');
    expect(sse).not.toContain('signature_delta');
    const deltas = chunksOf(await under.streamWith(replaySse(sse))).map((chunk) => chunk.choices?.[0]?.delta ?? {});
    const thinking = deltas.filter((delta) => delta.thinking !== undefined || delta.thinking_signature !== undefined);
    expect(thinking.at(0)?.thinking).toBe('Quick.');
    expect(thinking.at(-1)?.thinking_signature).toBe(THINKING_SIGNATURE);
  });
});

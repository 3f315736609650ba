/**
 * What a user of the Messages API notices of extended thinking on a Claude model, whoever hosts it
 * (Anthropic, Bedrock): the thinking streamed with its signature before the text, and a tool round
 * trip that works because the signed block goes back to the host unchanged and first, while the
 * same turn without it is refused. The scripted upstreams (anthropic-thinking-upstream.ts,
 * bedrock-claude-upstream.ts) think THOUGHT and call the first tool offered with `{"city":"Oslo"}`.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect, it } from 'vitest';
import { signatureOf } from './anthropic-thinking-upstream.js';

/** What the scripted Claude upstreams think before calling a tool. */
export const THOUGHT = 'The user asks about Oslo; I should use the tool first.';

/** The tool the conversations offer. */
export const WEATHER_TOOL = {
  name: 'get_weather',
  description: 'Weather now',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } },
};

/** The thinking request's fields, on `model`. */
const thinkingOn = (model: string) => ({ model, max_tokens: 4096, thinking: { type: 'enabled' as const, budget_tokens: 2048 } });

/**
 * Creates a thinking message with the interleaved-thinking beta on `model` and checks that it is
 * the signed thinking block, then the text; the caller checks what reached the host.
 */
async function expectThinkingMessage(client: Anthropic, model: string): Promise<void> {
  const message = await client.beta.messages.create({
    ...thinkingOn(model),
    betas: ['interleaved-thinking-2025-05-14'],
    messages: [{ role: 'user', content: 'Hello' }],
  });
  expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text']);
  expect(message.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) });
}

/** Streams a thinking message: two thinking deltas and the signature before the text `text`, and the final message has the block whole. */
async function expectThinkingStreamed(client: Anthropic, model: string, text: string): Promise<void> {
  const stream = client.messages.stream({ ...thinkingOn(model), messages: [{ role: 'user', content: 'Hello' }] });
  const deltas: string[] = [];
  let thinking = '';
  let signature = '';
  for await (const event of stream) {
    if (event.type !== 'content_block_delta') continue;
    deltas.push(event.delta.type);
    if (event.delta.type === 'thinking_delta') thinking += event.delta.thinking;
    if (event.delta.type === 'signature_delta') signature = event.delta.signature;
  }
  const final = await stream.finalMessage();
  expect(deltas).toEqual(['thinking_delta', 'thinking_delta', 'signature_delta', 'text_delta']);
  expect([thinking, signature]).toEqual([THOUGHT, signatureOf(THOUGHT)]);
  expect(final.content[0]).toEqual({ type: 'thinking', thinking: THOUGHT, signature: signatureOf(THOUGHT) });
  expect(final.content[1]).toMatchObject({ type: 'text', text });
}

/** How the host shows the round trip. */
export interface RoundTripHost {
  /** The answer's text once the tool's result `3 degrees` is back. */
  readonly answer: string;
  /** The assistant turn the host last received, in its own wire format. */
  sentAssistantTurn(): unknown;
  /** That turn as it must be: the signed thinking first, then the call `callId`. */
  expectedAssistantTurn(callId: string): unknown;
}

/**
 * A tool round trip with thinking, whole and streamed: the first answer is the signed thinking and
 * the call, the second (with the tool's result) the host's answer, and the host received the
 * thinking block first and unchanged. The same turn without its thinking block is refused (400).
 */
async function expectThinkingToolRoundTrip(client: Anthropic, model: string, host: RoundTripHost): Promise<void> {
  const ask: Anthropic.MessageParam = { role: 'user', content: 'Weather in Oslo?' };
  const base = { ...thinkingOn(model), tools: [WEATHER_TOOL] };
  for (const streamed of [false, true]) {
    const first = streamed
      ? await client.messages.stream({ ...base, messages: [ask] }).finalMessage()
      : await client.messages.create({ ...base, messages: [ask] });
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content.map((block) => block.type)).toEqual(['thinking', 'tool_use']);
    const call = first.content[1] as Anthropic.ToolUseBlock;
    const result: Anthropic.MessageParam = { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '3 degrees' }] };
    const second = await client.messages.create({ ...base, messages: [ask, { role: 'assistant', content: first.content }, result] });
    expect(second.content.at(-1)).toMatchObject({ type: 'text', text: host.answer });
    expect(host.sentAssistantTurn()).toEqual(host.expectedAssistantTurn(call.id));
  }
  const refused = await client.messages
    .create({
      ...base,
      messages: [
        ask,
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '3 degrees' }] },
      ],
    })
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
  expect(String((refused as Error).message)).toContain('must start with a thinking block');
}

/** A host of a Claude model with thinking, as the tests see what reached it. */
export interface ThinkingHost extends RoundTripHost {
  /** The host's name in the tests' titles. */
  readonly name: string;
  /** The catalog's model the host serves. */
  readonly model: string;
  /** The text a streamed thinking message ends with. */
  readonly streamedText: string;
  /** Checks that the thinking and the interleaved-thinking beta of the last request reached the host. */
  expectThinkingSent(): void;
}

/**
 * The tests of extended thinking on the host's model, through the gateway's Messages client (read
 * once the file's cluster is started): a message, the same streamed, and a tool round trip.
 */
export function itThinks(gateway: { readonly anthropic: Anthropic }, host: ThinkingHost): void {
  it(`creates a message whose thinking block carries its signature; the thinking and the interleaved-thinking beta reach ${host.name}`, async () => {
    await expectThinkingMessage(gateway.anthropic, host.model);
    host.expectThinkingSent();
  });

  it('streams the thinking block (thinking_delta, signature_delta) before the text, and the final message has it whole', async () => {
    await expectThinkingStreamed(gateway.anthropic, host.model, host.streamedText);
  });

  it(`completes a tool round trip with thinking: the signed block goes back to ${host.name} unchanged and first; without it ${host.name} refuses (400)`, async () => {
    await expectThinkingToolRoundTrip(gateway.anthropic, host.model, host);
  });
}

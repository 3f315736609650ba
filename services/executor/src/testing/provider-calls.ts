/** Helpers the provider adapters' tests share: a minimal request, and reading what a call produced. */
import { expect } from 'vitest';
import { GatewayError } from '@gateway/grpc';
import type { ChatChunk, ChatRequestOutput, MessageOutput } from '@gateway/proto';
import type { EmbeddingBatch, ProviderStreamEvent } from '../providers/provider.js';
import { UpstreamError } from '../providers/upstream-error.js';
import { toGatewayError } from '../to-gateway-error.js';

/** A one-message request ("Hello!"), with whatever else a test sets. */
export function simpleRequest(extra: Partial<ChatRequestOutput> = {}): ChatRequestOutput {
  return { messages: [{ role: 'ROLE_USER', content: 'text', text: 'Hello!', tool_calls: [] }], stop: [], tools: [], ...extra };
}

/** The signature of the thinking blocks in the Anthropic and Bedrock fixtures. */
export const THINKING_SIGNATURE = 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds';

/**
 * An earlier assistant turn with signed thinking, redacted thinking (`redacted`), the text
 * "Checking." and a get_weather call for Paris (`callId`); then the parts and calls of `more`.
 */
export function assistantTurnWithThinking(
  redacted: string,
  callId: string,
  more: { parts?: NonNullable<MessageOutput['parts']>['parts']; toolCalls?: MessageOutput['tool_calls'] } = {},
): MessageOutput {
  return {
    role: 'ROLE_ASSISTANT',
    content: 'parts',
    parts: {
      parts: [
        { thinking: { thinking: 'I should look it up.', signature: THINKING_SIGNATURE }, part: 'thinking' },
        { redacted_thinking: { data: redacted }, part: 'redacted_thinking' },
        { text: 'Checking.', part: 'text' },
        { tool_call_id: callId, part: 'tool_call_id' },
        ...(more.parts ?? []),
      ],
    },
    tool_calls: [{ id: callId, type: 'function', function: { name: 'get_weather', arguments: '{"location":"Paris"}' } }, ...(more.toolCalls ?? [])],
  };
}

/** A batch of texts to embed, at the model's own dimensions unless given. */
export function textBatch(inputs: string[], dimensions = 0): EmbeddingBatch {
  return { texts: inputs, tokenArrays: [], dimensions, user: '' };
}

/** Vectors as arrays of numbers, to compare with what a fake upstream sent. */
export function valuesOf(vectors: readonly Float32Array[]): number[][] {
  return vectors.map((vector) => Array.from(vector));
}

/** Every event a stream produced, in order. */
export async function collect(iterable: AsyncIterable<ProviderStreamEvent>): Promise<ProviderStreamEvent[]> {
  const events: ProviderStreamEvent[] = [];
  for await (const event of iterable) events.push(event);
  return events;
}

/** The chunks among a stream's events. */
export function chunksOf(events: ProviderStreamEvent[]): ChatChunk[] {
  return events.flatMap((event) => (event.type === 'chunk' ? [event.chunk] : []));
}

/** The text the first choice of `chunks` carries, joined. */
export function textOf(chunks: ChatChunk[]): string {
  return chunks.map((chunk) => chunk.choices?.[0]?.delta?.content ?? '').join('');
}

/** The GatewayError the gRPC boundary would send for a call that failed with an UpstreamError. */
export async function gatewayErrorOf(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(UpstreamError);
  const mapped = toGatewayError(error);
  expect(mapped).toBeInstanceOf(GatewayError);
  return mapped as GatewayError;
}

/** Runs a stream to its end; returns what it yielded and the failure it ended with, if any. */
export async function drain(iterable: AsyncIterable<ProviderStreamEvent>): Promise<{ events: ProviderStreamEvent[]; failure: unknown }> {
  const events: ProviderStreamEvent[] = [];
  const failure = await (async () => {
    for await (const event of iterable) events.push(event);
  })().then(
    () => undefined,
    (error: unknown) => error,
  );
  return { events, failure };
}

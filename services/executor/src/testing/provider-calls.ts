/** Helpers the provider adapters' tests share: a minimal request, and reading what a call produced. */
import { expect } from 'vitest';
import { GatewayError } from '@gateway/grpc';
import type { ChatChunk, ChatRequestOutput } from '@gateway/proto';
import type { ProviderStreamEvent } from '../providers/provider.js';
import type { FakeUpstream, Responder } from '@gateway/testing';
import { UpstreamError } from '../providers/upstream-error.js';
import { toGatewayError } from '../to-gateway-error.js';

/** A one-message request ("Hello!"), with whatever else a test sets. */
export function simpleRequest(extra: Partial<ChatRequestOutput> = {}): ChatRequestOutput {
  return { messages: [{ role: 'ROLE_USER', content: 'text', text: 'Hello!', tool_calls: [] }], stop: [], tools: [], ...extra };
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

/** A provider's two calls, with the context a test gives them. */
interface Completes {
  complete(request: ChatRequestOutput): Promise<{ choices?: Array<{ logprobs?: unknown; message?: { content?: string } | null }> }>;
  stream(request: ChatRequestOutput): AsyncIterable<ProviderStreamEvent>;
}

/**
 * Asks for logprobs from a provider that has none (Anthropic, Gemini): the answer comes, whole
 * and streamed, with no logprobs on any choice, and nothing about logprobs reaches the upstream.
 */
export async function expectAnswersWithoutLogprobs(calls: Completes, upstream: FakeUpstream, replies: { whole: Responder; stream: Responder }): Promise<void> {
  const request = simpleRequest({ logprobs: true, top_logprobs: 2 });
  upstream.respond(replies.whole);
  const response = await calls.complete(request);
  expect(JSON.stringify(upstream.requests.at(-1)?.body)).not.toMatch(/logprobs/i);
  expect(response.choices?.[0]?.message?.content).toBeTruthy();
  expect(response.choices?.every((choice) => choice.logprobs === undefined)).toBe(true);
  upstream.respond(replies.stream);
  const chunks = chunksOf(await collect(calls.stream(request)));
  expect(chunks.length).toBeGreaterThan(1);
  expect(chunks.every((chunk) => chunk.choices?.every((choice) => choice.logprobs === undefined))).toBe(true);
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

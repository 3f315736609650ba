/**
 * What the tests of the wires translated from chat (Responses, Messages) share: a completion as the
 * pipeline hands it to a wire, the chat chunks the executor renders, and the named SSE events a
 * renderer writes for them, read back.
 */
import { expect } from 'vitest';
import type { UsageOutput } from '@gateway/proto';
import type { Completion, CompletionWire, StreamRenderer } from '../completions/completion.js';

/** A completion as the pipeline hands it to the wire once the model answered, with `parsed` and `fields` set. */
export function answeredCompletion<C extends Completion>(parsed: unknown, fields: Record<string, unknown> = {}): C {
  const headers: Record<string, string> = {};
  const reply = {
    elapsedTime: 12,
    header(name: string, value: string) {
      headers[name] = value;
      return reply;
    },
  };
  return {
    parsed,
    routing: { model: { id: 'sim-full' } },
    answered: { id: 'sim-full' },
    attempts: [],
    guardDecisions: [],
    latencyMs: 12.5,
    costPico: 3_000_000n,
    reply,
    ...fields,
  } as unknown as C;
}

/** The stream `wire` opens for `completion`, begun without a first chunk; `head` holds the headers it set. */
export function begunStream<C extends Completion>(
  wire: Pick<CompletionWire<C['parsed']>, 'openStream'>,
  completion: C,
): { stream: StreamRenderer; head: Record<string, string> } {
  const stream = wire.openStream(completion);
  const head: Record<string, string> = {};
  stream.begin(undefined, head);
  return { stream, head };
}

/** A chat chunk as the executor renders it. */
export function chunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'sim-full',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
}

/** The events of a stream's text, in order; each block's `event:` line names its data's type. */
export function namedEvents(text: string): Array<{ type: string; sequence_number: number } & Record<string, unknown>> {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const [eventLine, dataLine] = block.split('\n');
      const event = JSON.parse(dataLine!.slice('data: '.length));
      expect(eventLine).toBe(`event: ${event.type}`);
      return event;
    });
}

/**
 * The events a stream writes for these chunk deltas, ended by a chunk with the finish reason;
 * neither API ends its stream with chat's `[DONE]`.
 */
export function streamedEvents(stream: StreamRenderer, deltas: Array<Record<string, unknown>>, finish: string, usage?: Partial<UsageOutput>) {
  const text = deltas.map((delta) => stream.event(chunk(delta))).join('') + stream.end(chunk({}, finish), usage as UsageOutput | undefined);
  expect(text).not.toContain('[DONE]');
  return namedEvents(text);
}

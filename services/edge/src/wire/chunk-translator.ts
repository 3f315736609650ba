/**
 * What the stream renderers of the APIs translated from chat (Responses, Messages) share: reading
 * the chat chunks the executor rendered, first choice only (their answers have one), as thinking,
 * text, tool-call fragments and the finish reason; each renderer writes them as its own API's
 * events.
 */
import { chunkJson, type StreamIdentity } from '@gateway/openai-wire';
import type { ChatChunkOutput } from '@gateway/proto';

/** A chat chunk's choice as OpenAI's JSON writes it (what the executor renders). */
export interface ChunkChoice {
  index?: number;
  delta?: {
    content?: string | null;
    refusal?: string | null;
    /** Thinking text (the executor writes a thinking delta as OpenAI-compatible servers do). */
    reasoning_content?: string | null;
    /** The signature that ends the thinking block being streamed. */
    thinking_signature?: string | null;
    /** A whole redacted thinking block's data. */
    redacted_thinking?: string | null;
    tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }>;
  };
  finish_reason?: string | null;
}

/** One fragment of a streamed tool call. */
export type ToolCallDelta = NonNullable<NonNullable<ChunkChoice['delta']>['tool_calls']>[number];

/** A renderer fed chat chunks: the events of each, in its API's shape. */
export abstract class ChunkTranslator {
  /** The chat finish reason of the answer, once a chunk gave it. */
  protected finish: string | null = null;
  /** For chunks the executor sent as messages: their chat JSON, read back like rendered ones. */
  protected abstract readonly identity: StreamIdentity;

  /** The events that open the stream, the first time only (empty after). */
  protected abstract open(): string;
  /** The events of a text delta (a streamed refusal is written as text). */
  protected abstract text(delta: string): string;
  /** The events of a tool call's fragment. */
  protected abstract toolCall(delta: ToolCallDelta): string;
  /** The events of a thinking delta; none by default (an API without thinking blocks drops it). */
  protected thinking(_delta: string): string {
    return '';
  }
  /** The events of the signature that ends a thinking block; none by default. */
  protected thinkingSignature(_signature: string): string {
    return '';
  }
  /** The events of a whole redacted thinking block; none by default. */
  protected redactedThinking(_data: string): string {
    return '';
  }

  /** The events of one chat chunk the executor rendered as JSON: the stream's opening first. */
  event(json: string): string {
    return this.open() + this.translate(json);
  }

  /** A chunk the executor sent as a message, as the chat JSON the renderer reads. */
  chunkJson(chunk: ChatChunkOutput): string {
    return JSON.stringify(chunkJson(chunk, this.identity));
  }

  /** The events of one chat chunk's JSON, its first choice only. */
  protected translate(json: string): string {
    const chunk = JSON.parse(json) as { choices?: ChunkChoice[] };
    let events = '';
    for (const choice of chunk.choices ?? []) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (delta?.reasoning_content) events += this.thinking(delta.reasoning_content);
      if (typeof delta?.thinking_signature === 'string') events += this.thinkingSignature(delta.thinking_signature);
      if (typeof delta?.redacted_thinking === 'string') events += this.redactedThinking(delta.redacted_thinking);
      if (delta?.content) events += this.text(delta.content);
      if (delta?.refusal) events += this.text(delta.refusal);
      for (const call of delta?.tool_calls ?? []) events += this.toolCall(call);
      if (choice.finish_reason) this.finish = choice.finish_reason;
    }
    return events;
  }
}

/**
 * Finish-reason and usage mapping, and Converse answers (whole and streamed) -> gateway
 * ChatResponse and ChatChunks. A Converse answer is re-spelled as the Anthropic Message (or stream
 * events) it corresponds to, and the anthropic adapter's mapping (providers/anthropic) does the
 * rest: one place turns Claude's blocks, thinking signatures and cache counts into the gateway's
 * shapes, whichever cloud served them.
 */
import type { ChatChunk, ChatResponse, Usage } from '@gateway/proto';
import { AnthropicStreamTranslator, fromAnthropicResponse, mapUsage } from '../anthropic/map-response.js';
import type { AnthropicResponse, AnthropicResponseBlock, AnthropicStreamEvent, AnthropicUsage } from '../anthropic/wire-types.js';
import { UpstreamError } from '../upstream-error.js';
import type { ConverseResponse, ConverseResponseBlock, ConverseStopReason, ConverseStreamEvent, ConverseUsage } from './wire-types.js';

/**
 * Converse stop reasons -> Anthropic's, which the anthropic mapping turns into OpenAI finish
 * reasons: end_turn, tool_use, max_tokens, stop_sequence and model_context_window_exceeded are
 * spelled alike; a guardrail intervention and Bedrock's content filter are a refusal
 * (`content_filter`). Others (added later) pass through and read as unspecified.
 */
export function anthropicStopReason(reason: ConverseStopReason | undefined): string | undefined {
  if (reason === 'guardrail_intervened' || reason === 'content_filtered') return 'refusal';
  return reason;
}

/** Converse counts -> Anthropic's: both leave cache reads and writes out of the input tokens. */
export function anthropicUsage(usage: ConverseUsage | undefined): AnthropicUsage {
  return {
    input_tokens: usage?.inputTokens ?? 0,
    output_tokens: usage?.outputTokens ?? 0,
    cache_read_input_tokens: usage?.cacheReadInputTokens ?? 0,
    cache_creation_input_tokens: usage?.cacheWriteInputTokens ?? 0,
  };
}

/** Converse usage -> Usage (prompt tokens include cache reads and writes; writes are five-minute ones). */
export function mapConverseUsage(usage: ConverseUsage | undefined): Usage {
  return mapUsage(anthropicUsage(usage));
}

function anthropicBlock(block: ConverseResponseBlock): AnthropicResponseBlock | undefined {
  if (typeof block.text === 'string') return { type: 'text', text: block.text };
  if (block.toolUse)
    return { type: 'tool_use', id: String(block.toolUse.toolUseId ?? ''), name: String(block.toolUse.name ?? ''), input: block.toolUse.input ?? {} };
  const reasoning = block.reasoningContent;
  if (reasoning?.reasoningText) return { type: 'thinking', thinking: reasoning.reasoningText.text ?? '', signature: reasoning.reasoningText.signature ?? '' };
  if (typeof reasoning?.redactedContent === 'string') return { type: 'redacted_thinking', data: reasoning.redactedContent };
  return undefined;
}

/** A whole Converse answer -> ChatResponse; `requestId` (x-amzn-requestid) becomes the completion id. */
export function fromConverseResponse(body: ConverseResponse, modelId: string, requestId: string | undefined): ChatResponse {
  const message: AnthropicResponse = {
    ...(requestId ? { id: requestId } : {}),
    content: (body.output?.message?.content ?? []).flatMap((block) => anthropicBlock(block) ?? []),
    stop_reason: anthropicStopReason(body.stopReason) ?? null,
    usage: anthropicUsage(body.usage),
  };
  return fromAnthropicResponse(message, modelId);
}

/** What each content block of a stream was started as, by its Converse index. */
type StartedBlock = 'text' | 'tool' | 'thinking' | 'redacted';

/**
 * Turns the events of one ConverseStream answer into OpenAI-shaped chunks, through the Anthropic
 * stream events they correspond to:
 * - messageStart -> message_start;
 * - contentBlockStart (a tool call) -> content_block_start of a tool_use block; the first delta of
 *   a block that had no start (text, reasoning) starts it as text, thinking or redacted_thinking;
 * - text, tool input, reasoning text and signature deltas -> text_delta, input_json_delta,
 *   thinking_delta and signature_delta; redacted reasoning -> a redacted_thinking block with its
 *   data (the base64 bytes Bedrock sent, to be sent back unchanged);
 * - contentBlockStop -> content_block_stop; messageStop -> message_delta with the stop reason;
 * - metadata (after messageStop) -> the usage; the stream is `finished` once both came.
 */
export class ConverseStreamTranslator {
  private readonly anthropic: AnthropicStreamTranslator;
  private readonly started = new Map<number, StartedBlock>();
  private sawStop = false;
  private sawMetadata = false;

  constructor(
    private readonly provider: string,
    modelId: string,
    private readonly requestId: string | undefined,
  ) {
    this.anthropic = new AnthropicStreamTranslator(provider, modelId);
  }

  /** True once messageStop and metadata both came: the answer and its usage are whole. */
  get finished(): boolean {
    return this.sawStop && this.sawMetadata;
  }

  /** The chunks one event produces (often none or one). */
  accept(event: ConverseStreamEvent): ChatChunk[] {
    return this.anthropicEvents(event).flatMap((anthropicEvent) => this.anthropic.accept(anthropicEvent));
  }

  /** The usage of the whole stream. */
  totalUsage(): Usage {
    return this.anthropic.totalUsage();
  }

  private anthropicEvents(event: ConverseStreamEvent): AnthropicStreamEvent[] {
    switch (event.type) {
      case 'messageStart':
        return [{ type: 'message_start', message: { ...(this.requestId ? { id: this.requestId } : {}), usage: {} } }];
      case 'contentBlockStart': {
        const index = this.indexOf(event.payload.contentBlockIndex);
        const tool = event.payload.start?.toolUse;
        if (!tool) return [];
        this.started.set(index, 'tool');
        return [
          {
            type: 'content_block_start',
            index,
            content_block: { type: 'tool_use', id: String(tool.toolUseId ?? ''), name: String(tool.name ?? ''), input: {} },
          },
        ];
      }
      case 'contentBlockDelta':
        return this.deltaEvents(this.indexOf(event.payload.contentBlockIndex), event.payload.delta ?? {});
      case 'contentBlockStop': {
        const index = this.indexOf(event.payload.contentBlockIndex);
        return this.started.has(index) ? [{ type: 'content_block_stop', index }] : [];
      }
      case 'messageStop':
        this.sawStop = true;
        return [{ type: 'message_delta', delta: { stop_reason: anthropicStopReason(event.payload.stopReason) ?? null } }];
      case 'metadata':
        this.sawMetadata = true;
        return [{ type: 'message_delta', delta: {}, usage: anthropicUsage(event.payload.usage) }];
      default:
        return [];
    }
  }

  private deltaEvents(
    index: number,
    delta: NonNullable<Extract<ConverseStreamEvent, { type: 'contentBlockDelta' }>['payload']['delta']>,
  ): AnthropicStreamEvent[] {
    const events: AnthropicStreamEvent[] = [];
    const start = (kind: StartedBlock, block: AnthropicResponseBlock) => {
      if (this.started.has(index)) return;
      this.started.set(index, kind);
      events.push({ type: 'content_block_start', index, content_block: block });
    };
    const reasoning = delta.reasoningContent;
    if (typeof delta.text === 'string') {
      start('text', { type: 'text', text: '' });
      events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: delta.text } });
    } else if (typeof delta.toolUse?.input === 'string') {
      if (this.started.get(index) !== 'tool')
        throw new UpstreamError('upstream stream sent tool input before its tool call', { provider: this.provider, kind: 'malformed' });
      events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: delta.toolUse.input } });
    } else if (typeof reasoning?.redactedContent === 'string') {
      start('redacted', { type: 'redacted_thinking', data: reasoning.redactedContent });
    } else if (reasoning) {
      start('thinking', { type: 'thinking', thinking: '', signature: '' });
      if (typeof reasoning.text === 'string') events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: reasoning.text } });
      if (typeof reasoning.signature === 'string')
        events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: reasoning.signature } });
    }
    return events;
  }

  private indexOf(index: unknown): number {
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0) {
      throw new UpstreamError('upstream stream sent a content block event without its index', { provider: this.provider, kind: 'malformed' });
    }
    return index;
  }
}

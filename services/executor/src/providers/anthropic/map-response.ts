/**
 * Finish-reason and usage mapping, and Anthropic Messages (whole and streamed) -> gateway
 * ChatResponse and ChatChunks shaped as OpenAI's. The gateway reports its catalog model id as
 * `model`, so a caller sees the id it can send again.
 */
import type { ChatChunk, ChatResponse, ChunkChoice, ContentPart, Delta, FinishReasonOutput, Usage } from '@gateway/proto';
import { completionId } from '../completion-id.js';
import { finishReasonMapper, type FinishReasonMapper } from '../finish-reasons.js';
import { UpstreamError } from '../upstream-error.js';
import { streamErrorOf } from './parse-upstream-error.js';
import type { AnthropicResponse, AnthropicResponseBlock, AnthropicStreamEvent, AnthropicUsage } from './wire-types.js';

/**
 * Anthropic stop reasons -> OpenAI finish reasons: end_turn, stop_sequence and pause_turn stop;
 * max_tokens and a full context window are length; tool_use is tool_calls; refusal (the safety
 * classifiers stopped the answer) is content_filter.
 */
export const mapStopReason: FinishReasonMapper = finishReasonMapper({
  end_turn: 'FINISH_REASON_STOP',
  stop_sequence: 'FINISH_REASON_STOP',
  pause_turn: 'FINISH_REASON_STOP',
  max_tokens: 'FINISH_REASON_LENGTH',
  model_context_window_exceeded: 'FINISH_REASON_LENGTH',
  tool_use: 'FINISH_REASON_TOOL_CALLS',
  refusal: 'FINISH_REASON_CONTENT_FILTER',
});

/**
 * Anthropic usage -> Usage. Anthropic's input_tokens excludes the tokens read from and written
 * to its prompt cache, so prompt_tokens is the sum of the three; cached_tokens is the part read
 * from the cache (billed at the cached-input price), cache_write_tokens the part written to it,
 * split by lifetime from `cache_creation` (billed at the cache-write prices). Writes an answer
 * reports without the split (older API versions) are five-minute writes, Anthropic's default.
 */
export function mapUsage(usage: AnthropicUsage): Usage {
  const cacheRead = usage.cache_read_input_tokens ?? 0;
  const written1h = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const written = Math.max(usage.cache_creation_input_tokens ?? 0, (usage.cache_creation?.ephemeral_5m_input_tokens ?? 0) + written1h);
  const prompt = (usage.input_tokens ?? 0) + cacheRead + written;
  const completion = usage.output_tokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    cached_tokens: cacheRead,
    reasoning_tokens: 0,
    cache_write_tokens: written,
    cache_write_5m_tokens: written - written1h,
    cache_write_1h_tokens: written1h,
  };
}

/** A thinking or redacted_thinking block of an answer as a thinking part; undefined for any other block. */
function thinkingPart(block: AnthropicResponseBlock): ContentPart | undefined {
  if (block.type === 'thinking') return { thinking: { thinking: String(block.thinking ?? ''), signature: String(block.signature ?? '') } };
  if (block.type === 'redacted_thinking') return { redacted_thinking: { data: String(block.data ?? '') } };
  return undefined;
}

/**
 * A whole Message -> ChatResponse: text blocks are the content, tool_use blocks the tool calls,
 * thinking and redacted_thinking blocks the thinking blocks (whole, signatures included).
 */
export function fromAnthropicResponse(body: AnthropicResponse, modelId: string): ChatResponse {
  const texts: string[] = [];
  const thinking: ContentPart[] = [];
  const toolCalls: NonNullable<NonNullable<ChatResponse['choices']>[number]['message']>['tool_calls'] = [];
  for (const block of body.content ?? []) {
    const part = thinkingPart(block);
    if (part) thinking.push(part);
    else if (block.type === 'text' && typeof block.text === 'string') texts.push(block.text);
    else if (block.type === 'tool_use') {
      toolCalls.push({
        id: String(block.id ?? ''),
        type: 'function',
        function: { name: String(block.name ?? ''), arguments: JSON.stringify(block.input ?? {}) },
      });
    }
  }
  return {
    id: completionId(body.id),
    created: Math.floor(Date.now() / 1000),
    model: modelId,
    choices: [
      {
        index: 0,
        finish_reason: mapStopReason(body.stop_reason),
        message: {
          ...(texts.length > 0 ? { content: texts.join('') } : {}),
          tool_calls: toolCalls,
          ...(thinking.length > 0 ? { thinking: { blocks: thinking } } : {}),
        },
      },
    ],
    usage: mapUsage(body.usage ?? {}),
  };
}

/** Events that only make sense after message_start. */
const CONTENT_EVENTS = new Set(['content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);

/** What one content block of a stream is, by its Anthropic index. */
type BlockState =
  | { readonly kind: 'text' }
  | { readonly kind: 'tool'; readonly toolIndex: number; readonly input: unknown; argumentsSent: boolean }
  | { readonly kind: 'thinking'; readonly signature: string; signed: boolean }
  | { readonly kind: 'ignored' };

/**
 * Turns the events of one Messages stream into OpenAI-shaped chunks, in order:
 * - message_start -> the first chunk, `role: assistant` with empty content;
 * - text deltas -> content deltas;
 * - each tool_use block -> a tool call numbered by the order of tool_use blocks: its first delta
 *   has index, id, type and name (`arguments: ""`), then each input_json_delta fragment as it came
 *   (so the fragments concatenate to the arguments JSON); a call whose input had no fragment gets
 *   its input (`{}`) when the block stops;
 * - a thinking block -> `thinking` deltas (thinking_delta), then its `thinking_signature`
 *   (signature_delta, or the signature its start carried, given when the block stops), which ends
 *   it; a redacted_thinking block -> one `redacted_thinking` delta with its data;
 * - message_delta -> a `delta: {}` chunk with the finish reason;
 * - message_stop ends the stream (`finished`); an error event throws a `stream_error`;
 * - ping, server-tool blocks and event types added later are skipped, as Anthropic asks clients to.
 */
export class AnthropicStreamTranslator {
  private id = completionId(undefined);
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly blocks = new Map<number, BlockState>();
  private nextToolIndex = 0;
  private usage: AnthropicUsage = {};
  private sawStart = false;
  /** True once message_stop arrived: the stream is complete. */
  finished = false;

  /** `secrets` are scrubbed from the message of an error event. */
  constructor(
    private readonly provider: string,
    private readonly modelId: string,
    private readonly secrets: readonly string[] = [],
  ) {}

  /** The chunks one event produces (often none or one). */
  accept(event: AnthropicStreamEvent): ChatChunk[] {
    if (!this.sawStart && CONTENT_EVENTS.has(event.type)) {
      throw new UpstreamError(`upstream stream sent ${event.type} before message_start`, { provider: this.provider, kind: 'malformed' });
    }
    switch (event.type) {
      case 'message_start': {
        this.sawStart = true;
        this.id = completionId(event.message?.id);
        this.usage = { ...(event.message?.usage ?? {}) };
        return [this.chunk({ role: 'ROLE_ASSISTANT', content: '' })];
      }
      case 'content_block_start':
        return this.startBlock(event.index, event.content_block);
      case 'content_block_delta':
        return this.blockDelta(event.index, event.delta as BlockDelta);
      case 'content_block_stop':
        return this.stopBlock(event.index);
      case 'message_delta': {
        // message_delta's usage counts are cumulative: they replace what message_start said.
        this.usage = { ...this.usage, ...definedFields(event.usage ?? {}) };
        const reason = mapStopReason(event.delta?.stop_reason);
        return reason === 'FINISH_REASON_UNSPECIFIED' ? [] : [this.chunk({}, reason)];
      }
      case 'message_stop':
        this.finished = true;
        return [];
      case 'error':
        throw streamErrorOf(this.provider, event.error, this.secrets);
      default:
        return [];
    }
  }

  private startBlock(index: number, block: AnthropicResponseBlock | undefined): ChatChunk[] {
    switch (block?.type) {
      case 'text': {
        this.blocks.set(index, { kind: 'text' });
        const text = (block as { text?: unknown }).text;
        return typeof text === 'string' && text !== '' ? [this.chunk({ content: text })] : [];
      }
      case 'tool_use': {
        const { id, name, input } = block as { id?: unknown; name?: unknown; input?: unknown };
        const toolIndex = this.nextToolIndex++;
        this.blocks.set(index, { kind: 'tool', toolIndex, input, argumentsSent: false });
        return [
          this.chunk({ tool_calls: [{ index: toolIndex, id: String(id ?? ''), type: 'function', function: { name: String(name ?? ''), arguments: '' } }] }),
        ];
      }
      case 'thinking': {
        const { thinking, signature } = block as { thinking?: unknown; signature?: unknown };
        this.blocks.set(index, { kind: 'thinking', signature: typeof signature === 'string' ? signature : '', signed: false });
        return typeof thinking === 'string' && thinking !== '' ? [this.chunk({ thinking })] : [];
      }
      case 'redacted_thinking':
        this.blocks.set(index, { kind: 'ignored' });
        return [this.chunk({ redacted_thinking: String((block as { data?: unknown }).data ?? '') })];
      default:
        this.blocks.set(index, { kind: 'ignored' });
        return [];
    }
  }

  private blockDelta(index: number, delta: BlockDelta | undefined): ChatChunk[] {
    const state = this.blocks.get(index);
    if (delta?.type === 'text_delta' && typeof delta.text === 'string' && state?.kind !== 'ignored') return [this.chunk({ content: delta.text })];
    if (delta?.type === 'input_json_delta' && state?.kind === 'tool' && typeof delta.partial_json === 'string' && delta.partial_json !== '') {
      state.argumentsSent = true;
      return [this.chunk({ tool_calls: [{ index: state.toolIndex, function: { arguments: delta.partial_json } }] })];
    }
    if (state?.kind !== 'thinking') return [];
    if (delta?.type === 'thinking_delta' && typeof delta.thinking === 'string' && delta.thinking !== '') return [this.chunk({ thinking: delta.thinking })];
    if (delta?.type === 'signature_delta' && typeof delta.signature === 'string' && !state.signed) {
      state.signed = true;
      return [this.chunk({ thinking_signature: delta.signature })];
    }
    return [];
  }

  private stopBlock(index: number): ChatChunk[] {
    const state = this.blocks.get(index);
    if (state?.kind === 'tool' && !state.argumentsSent) {
      state.argumentsSent = true;
      return [this.chunk({ tool_calls: [{ index: state.toolIndex, function: { arguments: JSON.stringify(state.input ?? {}) } }] })];
    }
    // A signature that came with the block's start, not as a delta, ends the block here.
    if (state?.kind === 'thinking' && !state.signed) {
      state.signed = true;
      return [this.chunk({ thinking_signature: state.signature })];
    }
    return [];
  }

  /** The usage of the whole stream so far. */
  totalUsage(): Usage {
    return mapUsage(this.usage);
  }

  private chunk(delta: Delta, finishReason: FinishReasonOutput = 'FINISH_REASON_UNSPECIFIED'): ChatChunk {
    const choice: ChunkChoice = { index: 0, finish_reason: finishReason, delta: { ...delta, tool_calls: delta.tool_calls ?? [] } };
    return { id: this.id, created: this.created, model: this.modelId, choices: [choice] };
  }
}

/** A content_block_delta's delta, as read. */
type BlockDelta = { type?: string; text?: unknown; partial_json?: unknown; thinking?: unknown; signature?: unknown };

/** The counts a usage object states (numbers, and the cache_creation split when present). */
function definedFields(usage: AnthropicUsage): AnthropicUsage {
  return Object.fromEntries(
    Object.entries(usage).filter(([name, value]) => typeof value === 'number' || (name === 'cache_creation' && value !== null && typeof value === 'object')),
  ) as AnthropicUsage;
}

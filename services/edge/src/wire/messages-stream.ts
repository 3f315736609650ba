/**
 * The Messages stream of one answer, as Anthropic's API writes it: `message_start`, then per
 * content block `content_block_start`, its deltas (`thinking_delta` then `signature_delta`,
 * `text_delta`, `input_json_delta`) and `content_block_stop` (a `redacted_thinking` block whole in
 * its start), then `message_delta` (stop reason, usage, and the `gateway` object as an
 * extra field) and `message_stop`; a failure after the first byte ends it with an `error` event.
 * Each event is written as `event: <type>` and `data: <json>`. The executor's chat chunks are read
 * and translated as they come.
 */
import type { StreamIdentity } from '@gateway/openai-wire';
import type { ChatChunkOutput, UsageOutput } from '@gateway/proto';
import type { Completion, StreamRenderer } from '../completions/completion.js';
import type { RequestError } from '../errors.js';
import { gatewayInfo } from './chat-completions-wire.js';
import { anthropicErrorJson, messageUsage, newMessageId, stopReason } from './messages-output.js';
import { ChunkTranslator, type ToolCallDelta } from './chunk-translator.js';

type JsonObject = Record<string, unknown>;

/** The content block being written: thinking, text, or the tool use of one chat tool call index. */
type OpenBlock = { kind: 'thinking' } | { kind: 'text' } | { kind: 'tool_use'; callIndex: number };

/** The Messages renderer of one stream. */
export class MessagesStream extends ChunkTranslator implements StreamRenderer {
  private readonly id: string;
  private model: string;
  private opened = false;
  private blockCount = 0;
  private block: OpenBlock | undefined;
  /** Chat tool call indexes already given a block: a later fragment of a finished call is dropped. */
  private readonly callsSeen = new Set<number>();
  protected readonly identity: StreamIdentity;

  constructor(private readonly completion: Completion) {
    super();
    this.id = completion.responseId ?? newMessageId();
    this.model = completion.routing.model.id ?? '';
    this.identity = { id: this.id, created: Math.floor(Date.now() / 1000), model: this.model, includeUsage: false };
  }

  named(): void {}

  begin(_first: ChatChunkOutput | undefined, head: Record<string, string>): void {
    this.model = this.completion.answered.id ?? this.model;
    head['request-id'] = this.completion.requestId;
  }

  end(held: string | undefined, usage: UsageOutput | undefined): string {
    let tail = held === undefined ? this.open() : this.event(held);
    tail += this.closeBlock();
    tail += this.emit('message_delta', {
      delta: { stop_reason: stopReason(this.finish), stop_sequence: null },
      usage: messageUsage(usage),
      gateway: gatewayInfo(this.completion),
    });
    return tail + this.emit('message_stop', {});
  }

  failure(error: RequestError): string {
    return `${this.open()}event: error\ndata: ${anthropicErrorJson(error)}\n\n`;
  }

  private emit(type: string, fields: JsonObject): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`;
  }

  /** `message_start` (the message with no content yet, its input tokens as counted), before the first content. */
  protected open(): string {
    if (this.opened) return '';
    this.opened = true;
    const message = {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: this.completion.promptTokens, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    };
    return this.emit('message_start', { message }) + this.emit('ping', {});
  }

  /** A text delta: opens a text block at the first (after a tool use, a new one). */
  protected text(delta: string): string {
    let events = '';
    if (this.block?.kind !== 'text') {
      events += this.closeBlock();
      events += this.startBlock({ kind: 'text' }, { type: 'text', text: '' });
    }
    return events + this.emit('content_block_delta', { index: this.blockCount - 1, delta: { type: 'text_delta', text: delta } });
  }

  /** A thinking delta: opens a thinking block at the first (after a signature or other content, a new one). */
  protected override thinking(delta: string): string {
    return this.openThinking() + this.emit('content_block_delta', { index: this.blockCount - 1, delta: { type: 'thinking_delta', thinking: delta } });
  }

  /** The signature of the thinking block being written (one opened for it when none is): it ends the block. */
  protected override thinkingSignature(signature: string): string {
    const events = this.openThinking() + this.emit('content_block_delta', { index: this.blockCount - 1, delta: { type: 'signature_delta', signature } });
    return events + this.closeBlock();
  }

  /** A redacted thinking block: whole in its start, then its stop. */
  protected override redactedThinking(data: string): string {
    return this.closeBlock() + this.startBlock({ kind: 'thinking' }, { type: 'redacted_thinking', data }) + this.closeBlock();
  }

  private openThinking(): string {
    if (this.block?.kind === 'thinking') return '';
    return this.closeBlock() + this.startBlock({ kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
  }

  /** A tool call delta: opens its tool_use block at its first fragment, then its arguments as partial JSON. */
  protected toolCall(delta: ToolCallDelta): string {
    const callIndex = delta.index ?? 0;
    let events = '';
    const open = this.block?.kind === 'tool_use' && this.block.callIndex === callIndex;
    if (!open) {
      // Chat streams send calls one after another: a fragment of a call already done cannot come.
      if (this.callsSeen.has(callIndex)) return events;
      this.callsSeen.add(callIndex);
      events += this.closeBlock();
      const block = { type: 'tool_use', id: delta.id || newMessageId('toolu'), name: delta.function?.name ?? '', input: {} };
      events += this.startBlock({ kind: 'tool_use', callIndex }, block);
    }
    const fragment = delta.function?.arguments ?? '';
    if (fragment === '') return events;
    return events + this.emit('content_block_delta', { index: this.blockCount - 1, delta: { type: 'input_json_delta', partial_json: fragment } });
  }

  private startBlock(block: OpenBlock, contentBlock: JsonObject): string {
    this.block = block;
    return this.emit('content_block_start', { index: this.blockCount++, content_block: contentBlock });
  }

  private closeBlock(): string {
    if (!this.block) return '';
    this.block = undefined;
    return this.emit('content_block_stop', { index: this.blockCount - 1 });
  }
}

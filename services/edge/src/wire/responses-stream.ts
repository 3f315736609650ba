/**
 * One streamed answer in the Responses API's event sequence: the executor's chat chunks, as they
 * come, become `response.created`, `response.in_progress`, then per output item, one after
 * another, `response.output_item.added`, its content (`response.content_part.added`,
 * `response.output_text.delta`... or `response.function_call_arguments.delta`...) and its `.done`
 * events, and last `response.completed` (or `response.incomplete` when cut at max_output_tokens)
 * with the whole response, its usage and the `gateway` object. A failure after the first byte ends
 * the stream with `response.failed`. A compaction's summary streams no text: its one `compaction`
 * item is added and done before `response.completed` (responses-compaction.ts). Every event is `event: <type>\ndata: <json>\n\n` with a
 * `sequence_number` from 0; unlike chat completions there is no `data: [DONE]`.
 */
import type { StreamIdentity } from '@gateway/openai-wire';
import type { ChatChunkOutput, UsageOutput } from '@gateway/proto';
import type { StreamRenderer } from '../completions/completion.js';
import type { RequestError } from '../errors.js';
import type { ResponsesContext } from './parse-responses-request.js';
import {
  messageItem,
  newId,
  outputText,
  type ResponseState,
  type ResponsesCompletion,
  responseObject,
  statusOf,
  toolCallId,
  toolCallItem,
} from './responses-output.js';
import { compactionItem } from './responses-compaction.js';
import { keepResponse, storedFields } from './responses-store.js';
import { ChunkTranslator, type ToolCallDelta } from './chunk-translator.js';

type JsonObject = Record<string, unknown>;

/** The message item being written: its place in `output` and its text so far. */
interface OpenMessage {
  id: string;
  outputIndex: number;
  text: string;
}

/** A function call item being written. */
interface OpenCall {
  id: string;
  outputIndex: number;
  callId: string;
  name: string;
  arguments: string;
}

/** The Responses renderer of one stream. */
export class ResponsesStream extends ChunkTranslator implements StreamRenderer {
  private readonly id: string;
  private createdAt = Math.floor(Date.now() / 1000);
  private model: string;
  private sequence = 0;
  private opened = false;
  /** Finished output items, in order; open ones are added when they finish. */
  private readonly output: JsonObject[] = [];
  private outputCount = 0;
  private message: OpenMessage | undefined;
  /** Open function calls by their chat tool call index, and the indexes of every call begun. */
  private readonly calls = new Map<number, OpenCall>();
  private readonly callsSeen = new Set<number>();
  protected readonly identity: StreamIdentity;
  private readonly responses: ResponsesContext;
  /** A compaction's summary so far: it is not streamed, it becomes the one `compaction` item. */
  private summary = '';

  constructor(private readonly completion: ResponsesCompletion) {
    super();
    this.id = completion.responseId ?? newId('resp');
    this.model = completion.routing.model.id ?? '';
    this.identity = { id: this.id, created: this.createdAt, model: this.model, includeUsage: false };
    this.responses = completion.parsed.responses;
  }

  named(_id: string, created: number): void {
    if (created > 0) this.createdAt = created;
  }

  begin(_first: ChatChunkOutput | undefined, head: Record<string, string>): void {
    this.model = this.completion.answered.id ?? this.model;
    head['openai-model'] = this.model;
    head['openai-processing-ms'] = String(Math.round(this.completion.reply.elapsedTime));
  }

  end(held: string | undefined, usage: UsageOutput | undefined): string {
    let tail = held === undefined ? this.open() : this.event(held);
    tail += this.closeItems();
    if (this.responses.compaction) tail += this.closeCompaction();
    const { status, incomplete_details } = statusOf(this.finish);
    const response = this.response({ status, incompleteDetails: incomplete_details, usage, final: true });
    keepResponse(this.completion, response);
    return tail + this.emit(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  failure(error: RequestError): string {
    const response = this.response({ status: 'failed', error: { code: error.code ?? 'server_error', message: error.message }, final: true });
    return this.open() + this.emit('response.failed', { response });
  }

  /** The response as it stands. */
  private response(state: Omit<ResponseState, 'id' | 'createdAt' | 'model' | 'output'>): JsonObject {
    const response = responseObject(this.completion, { id: this.id, createdAt: this.createdAt, model: this.model, output: this.output, ...state });
    return Object.assign(response, storedFields(this.completion));
  }

  /** The first two events, before the first content. */
  protected open(): string {
    if (this.opened) return '';
    this.opened = true;
    const response = this.response({ status: 'in_progress', final: false });
    return this.emit('response.created', { response }) + this.emit('response.in_progress', { response });
  }

  private emit(type: string, fields: JsonObject): string {
    return `event: ${type}\ndata: ${JSON.stringify({ type, ...fields, sequence_number: this.sequence++ })}\n\n`;
  }

  /** The one output item of a compaction: its summary, added and done at once. */
  private closeCompaction(): string {
    const item = compactionItem(this.summary);
    const outputIndex = this.outputCount++;
    this.output.push(item);
    return (
      this.emit('response.output_item.added', { output_index: outputIndex, item }) + this.emit('response.output_item.done', { output_index: outputIndex, item })
    );
  }

  /** A text delta: opens the message item (and its output_text part) at the first; a compaction's is kept for its item. */
  protected text(delta: string): string {
    if (this.responses.compaction) {
      this.summary += delta;
      return '';
    }
    let events = '';
    if (!this.message) {
      // Items follow one another: a function call before this text is done.
      events += this.closeItems();
      this.message = { id: newId('msg'), outputIndex: this.outputCount++, text: '' };
      const { id, outputIndex } = this.message;
      events += this.emit('response.output_item.added', { output_index: outputIndex, item: messageItem(id, [], 'in_progress') });
      events += this.emit('response.content_part.added', { item_id: id, output_index: outputIndex, content_index: 0, part: outputText('') });
    }
    const message = this.message;
    message.text += delta;
    return `${events}${this.emit('response.output_text.delta', { item_id: message.id, output_index: message.outputIndex, content_index: 0, delta, logprobs: [] })}`;
  }

  /**
   * A tool call delta: opens its item at its first fragment, then its arguments. A custom tool's
   * call streams no deltas: its raw input is read out of the whole arguments when it is done.
   */
  protected toolCall(delta: ToolCallDelta): string {
    // A compaction answers its summary only (its request called no tool).
    if (this.responses.compaction) return '';
    const index = delta.index ?? 0;
    let events = '';
    let call = this.calls.get(index);
    // Chat streams send calls one after another: a fragment of a call already done cannot come.
    if (!call && this.callsSeen.has(index)) return events;
    if (!call) {
      // Items follow one another: the message or call before this one is done.
      events += this.closeItems();
      this.callsSeen.add(index);
      const name = delta.function?.name ?? '';
      call = { id: toolCallId(name, this.responses), outputIndex: this.outputCount++, callId: delta.id ?? newId('fc'), name, arguments: '' };
      this.calls.set(index, call);
      const item = toolCallItem({ ...call, status: 'in_progress' }, this.responses);
      events += this.emit('response.output_item.added', { output_index: call.outputIndex, item });
    }
    const fragment = delta.function?.arguments ?? '';
    call.arguments += fragment;
    if (fragment === '' || this.responses.custom.has(call.name)) return events;
    return events + this.emit('response.function_call_arguments.delta', { item_id: call.id, output_index: call.outputIndex, delta: fragment });
  }

  /** The `.done` events of every open item, in output order; each is then part of `output`. */
  private closeItems(): string {
    const status = statusOf(this.finish).status;
    const closers: Array<{ outputIndex: number; close: () => string }> = [];
    const message = this.message;
    if (message) closers.push({ outputIndex: message.outputIndex, close: () => this.closeMessage(message, status) });
    for (const call of this.calls.values()) closers.push({ outputIndex: call.outputIndex, close: () => this.closeCall(call) });
    closers.sort((a, b) => a.outputIndex - b.outputIndex);
    const events = closers.map((closer) => closer.close()).join('');
    this.message = undefined;
    this.calls.clear();
    return events;
  }

  private closeMessage(message: OpenMessage, status: string): string {
    const { id, outputIndex, text } = message;
    const part = outputText(text);
    const item = messageItem(id, [part], status);
    this.output.push(item);
    return (
      this.emit('response.output_text.done', { item_id: id, output_index: outputIndex, content_index: 0, text, logprobs: [] }) +
      this.emit('response.content_part.done', { item_id: id, output_index: outputIndex, content_index: 0, part }) +
      this.emit('response.output_item.done', { output_index: outputIndex, item })
    );
  }

  private closeCall(call: OpenCall): string {
    const item = toolCallItem({ ...call, status: 'completed' }, this.responses);
    this.output.push(item);
    if (item.type === 'custom_tool_call') {
      const input = item.input as string;
      const place = { item_id: call.id, output_index: call.outputIndex };
      return (
        (input === '' ? '' : this.emit('response.custom_tool_call_input.delta', { ...place, delta: input })) +
        this.emit('response.custom_tool_call_input.done', { ...place, input }) +
        this.emit('response.output_item.done', { output_index: call.outputIndex, item })
      );
    }
    return (
      this.emit('response.function_call_arguments.done', { item_id: call.id, output_index: call.outputIndex, name: item.name, arguments: call.arguments }) +
      this.emit('response.output_item.done', { output_index: call.outputIndex, item })
    );
  }
}

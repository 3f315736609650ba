/**
 * A streamed answer put back together as a whole one (a ChatResponse), so that a stream's answer
 * is kept in the cache in the same form as a whole answer and can be served either way. It takes
 * the executor's events as they come: chunks it rendered (OpenAI `chat.completion.chunk` JSON,
 * with thinking as `reasoning_content`, `thinking_signature` and `redacted_thinking`) or chunks
 * as messages. A chunk it cannot read makes the answer one not to keep.
 */
import type { ChatChunkOutput, ChatResponseOutput, ContentPartOutput, DeltaOutput, FinishReasonOutput, UsageOutput } from '@gateway/proto';

/** OpenAI's finish reasons as the proto's. */
const FINISH_REASONS: Readonly<Record<string, FinishReasonOutput>> = {
  stop: 'FINISH_REASON_STOP',
  length: 'FINISH_REASON_LENGTH',
  tool_calls: 'FINISH_REASON_TOOL_CALLS',
  content_filter: 'FINISH_REASON_CONTENT_FILTER',
  function_call: 'FINISH_REASON_TOOL_CALLS',
};

/** One choice as its chunks built it so far. */
class ChoiceParts {
  content: string | undefined;
  refusal: string | undefined;
  readonly toolCalls = new Map<number, { id: string; type: string; name: string; arguments: string }>();
  readonly blocks: ContentPartOutput[] = [];
  /** The thinking block still being streamed (no signature yet). */
  thinking: { thinking: string; signature: string } | undefined;
  finish: FinishReasonOutput | undefined;

  add(delta: DeltaOutput | undefined): void {
    if (!delta) return;
    if (delta.thinking !== undefined && delta.thinking !== null) {
      if (!this.thinking) {
        this.thinking = { thinking: '', signature: '' };
        this.blocks.push({ thinking: this.thinking });
      }
      this.thinking.thinking += delta.thinking;
    }
    if (delta.thinking_signature !== undefined && delta.thinking_signature !== null) {
      if (!this.thinking) this.blocks.push({ thinking: (this.thinking = { thinking: '', signature: '' }) });
      this.thinking.signature = delta.thinking_signature;
      this.thinking = undefined;
    }
    if (delta.redacted_thinking !== undefined && delta.redacted_thinking !== null) {
      this.blocks.push({ redacted_thinking: { data: delta.redacted_thinking } });
      this.thinking = undefined;
    }
    if (delta.content !== undefined && delta.content !== null) this.content = (this.content ?? '') + delta.content;
    if (delta.refusal !== undefined && delta.refusal !== null) this.refusal = (this.refusal ?? '') + delta.refusal;
    for (const call of delta.tool_calls ?? []) {
      const index = call.index ?? 0;
      let entry = this.toolCalls.get(index);
      if (!entry) this.toolCalls.set(index, (entry = { id: '', type: 'function', name: '', arguments: '' }));
      if (call.id) entry.id = call.id;
      if (call.type) entry.type = call.type;
      if (call.function?.name) entry.name += call.function.name;
      entry.arguments += call.function?.arguments ?? '';
    }
  }
}

/** A rendered chunk's delta (OpenAI JSON) as the proto's Delta. */
function deltaOfJson(delta: Record<string, unknown> | undefined): DeltaOutput | undefined {
  if (!delta) return undefined;
  const text = (name: string) => (typeof delta[name] === 'string' ? (delta[name] as string) : undefined);
  const functionCall = delta.function_call as { name?: string; arguments?: string } | undefined;
  const calls = Array.isArray(delta.tool_calls)
    ? (delta.tool_calls as { index?: number; id?: string; type?: string; function?: { name?: string; arguments?: string } }[])
    : functionCall
      ? [{ index: 0, function: functionCall }]
      : [];
  return {
    content: text('content'),
    refusal: text('refusal'),
    thinking: text('reasoning_content'),
    thinking_signature: text('thinking_signature'),
    redacted_thinking: text('redacted_thinking'),
    tool_calls: calls.map((call) => ({ index: call.index ?? 0, id: call.id, type: call.type, function: call.function })),
  } as DeltaOutput;
}

/** Puts one stream's chunks back together. */
export class AnswerAssembler {
  private readonly choices = new Map<number, ChoiceParts>();
  private id = '';
  private created = 0;
  private model = '';
  /** False once a chunk could not be read, or carried what a kept answer would lose (logprobs). */
  private keepable = true;

  private choice(index: number): ChoiceParts {
    let choice = this.choices.get(index);
    if (!choice) this.choices.set(index, (choice = new ChoiceParts()));
    return choice;
  }

  /** A chunk the executor rendered, as its JSON text. */
  addRendered(json: string): void {
    if (!this.keepable) return;
    try {
      const chunk = JSON.parse(json) as { id?: string; created?: number; model?: string; choices?: Record<string, unknown>[] };
      this.id ||= chunk.id ?? '';
      this.created ||= chunk.created ?? 0;
      this.model ||= chunk.model ?? '';
      for (const choice of chunk.choices ?? []) {
        if (choice.logprobs) this.keepable = false;
        const parts = this.choice(Number(choice.index ?? 0));
        parts.add(deltaOfJson(choice.delta as Record<string, unknown> | undefined));
        if (typeof choice.finish_reason === 'string') parts.finish = FINISH_REASONS[choice.finish_reason] ?? 'FINISH_REASON_STOP';
      }
    } catch {
      this.keepable = false;
    }
  }

  /** A chunk the executor sent as a message. */
  addChunk(chunk: ChatChunkOutput): void {
    if (!this.keepable) return;
    this.id ||= chunk.id ?? '';
    this.created ||= Number(chunk.created) || 0;
    this.model ||= chunk.model ?? '';
    for (const choice of chunk.choices) {
      if (choice.logprobs) this.keepable = false;
      const parts = this.choice(choice.index ?? 0);
      parts.add(choice.delta ?? undefined);
      if (choice.finish_reason && choice.finish_reason !== 'FINISH_REASON_UNSPECIFIED') parts.finish = choice.finish_reason;
    }
  }

  /** The whole answer of a completed stream, or undefined when it is not one to keep (every choice must have finished). */
  finish(usage: UsageOutput | undefined): ChatResponseOutput | undefined {
    if (!this.keepable || this.choices.size === 0) return undefined;
    const choices = [...this.choices.entries()].sort(([a], [b]) => a - b);
    if (choices.some(([, parts]) => parts.finish === undefined)) return undefined;
    return {
      id: this.id,
      created: this.created,
      model: this.model,
      choices: choices.map(([index, parts]) => ({
        index,
        finish_reason: parts.finish,
        message: {
          ...(parts.content !== undefined && { content: parts.content }),
          ...(parts.refusal !== undefined && { refusal: parts.refusal }),
          tool_calls: [...parts.toolCalls.entries()]
            .sort(([a], [b]) => a - b)
            .map(([, call]) => ({ id: call.id, type: call.type, function: { name: call.name, arguments: call.arguments } })),
          ...(parts.blocks.length > 0 && { thinking: { blocks: parts.blocks } }),
        },
      })),
      ...(usage && { usage }),
    };
  }
}

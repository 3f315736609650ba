/**
 * Finish-reason and usage mapping, and Gemini GenerateContentResponses (whole and streamed) ->
 * gateway ChatResponse and ChatChunks shaped as OpenAI's. The gateway reports its catalog model id
 * as `model`, so a caller sees the id it can send again.
 */
import { createHash } from 'node:crypto';
import { completionId } from '../completion-id.js';
import type { ChatChunk, ChatResponse, ChunkChoice, FinishReasonOutput, ToolCallDelta, Usage } from '@gateway/proto';
import type { GeminiCandidate, GeminiPart, GeminiResponse, GeminiUsageMetadata } from './wire-types.js';

/** Finish reasons that mean a safety or policy filter stopped the answer. */
const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT']);

/**
 * Gemini finish reasons -> OpenAI's: STOP is `stop`, or `tool_calls` when the candidate called
 * functions (Gemini says STOP for both); MAX_TOKENS is `length`; the safety and policy reasons are
 * `content_filter`; anything else (LANGUAGE, OTHER, MALFORMED_FUNCTION_CALL, ...) is `stop`.
 */
export function mapFinishReason(reason: string | undefined, calledFunctions: boolean): FinishReasonOutput {
  if (reason === undefined || reason === '' || reason === 'FINISH_REASON_UNSPECIFIED') return 'FINISH_REASON_UNSPECIFIED';
  if (reason === 'MAX_TOKENS') return 'FINISH_REASON_LENGTH';
  if (FILTERED.has(reason)) return 'FINISH_REASON_CONTENT_FILTER';
  return calledFunctions ? 'FINISH_REASON_TOOL_CALLS' : 'FINISH_REASON_STOP';
}

/**
 * UsageMetadata -> Usage. promptTokenCount already includes the cached part
 * (cachedContentTokenCount, billed at the cached-input price) and tool-use prompt tokens are input
 * too. Thinking tokens are billed as output, so completion_tokens includes them, as OpenAI's does
 * its reasoning tokens. Gemini reports no cache writes (its implicit cache costs nothing to fill;
 * explicit caches are billed for storage, outside any completion), so cache_write_tokens stays 0.
 */
export function mapUsage(usage: GeminiUsageMetadata | undefined): Usage {
  const prompt = (usage?.promptTokenCount ?? 0) + (usage?.toolUsePromptTokenCount ?? 0);
  const reasoning = usage?.thoughtsTokenCount ?? 0;
  const completion = (usage?.candidatesTokenCount ?? 0) + reasoning;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    cached_tokens: usage?.cachedContentTokenCount ?? 0,
    reasoning_tokens: reasoning,
  };
}

/**
 * The id of a function call: Gemini's own when it sends one, else derived from the response id,
 * the candidate, the call's position, name and arguments, so the same answer gives the same ids
 * whole or streamed, and a tool message can refer back to it.
 */
export function toolCallId(responseId: string, candidate: number, position: number, call: NonNullable<GeminiPart['functionCall']>): string {
  if (call.id) return call.id;
  const digest = createHash('sha256')
    .update(`${responseId}\u0000${candidate}\u0000${position}\u0000${call.name}\u0000${JSON.stringify(call.args ?? {})}`)
    .digest('hex');
  return `call_${digest.slice(0, 24)}`;
}

function answerParts(candidate: GeminiCandidate): GeminiPart[] {
  // Thought summaries are the model's reasoning, not its answer.
  return (candidate.content?.parts ?? []).filter((part) => part.thought !== true);
}

/** A whole response -> ChatResponse; a prompt blocked before any candidate is one content_filter choice. */
export function fromGeminiResponse(body: GeminiResponse, modelId: string): ChatResponse {
  const responseId = body.responseId ?? '';
  const candidates = body.candidates ?? [];
  const choices: NonNullable<ChatResponse['choices']> = candidates.map((candidate, position) => {
    const index = candidate.index ?? position;
    const parts = answerParts(candidate);
    const texts = parts.flatMap((part) => (typeof part.text === 'string' ? [part.text] : []));
    const calls = parts.flatMap((part) => (part.functionCall ? [part.functionCall] : []));
    return {
      index,
      finish_reason: mapFinishReason(candidate.finishReason, calls.length > 0),
      message: {
        ...(texts.length > 0 ? { content: texts.join('') } : {}),
        tool_calls: calls.map((call, callPosition) => ({
          id: toolCallId(responseId, index, callPosition, call),
          type: 'function',
          function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
        })),
      },
    };
  });
  if (choices.length === 0 && body.promptFeedback?.blockReason) {
    choices.push({ index: 0, finish_reason: 'FINISH_REASON_CONTENT_FILTER', message: { tool_calls: [] } });
  }
  return { id: completionId(body.responseId), created: Math.floor(Date.now() / 1000), model: modelId, choices, usage: mapUsage(body.usageMetadata) };
}

interface CandidateState {
  calls: number;
  finished: boolean;
}

/**
 * Turns the chunks of one streamGenerateContent (alt=sse) stream into OpenAI-shaped chunks: per
 * candidate, the first delta has `role: assistant`; text parts are content deltas; a function
 * call, which Gemini sends whole in one chunk, is one tool-call delta with index, id, type, name
 * and the complete arguments; a finish reason is a `delta: {}` chunk of its own. The usage is the
 * last usageMetadata (Gemini's counts are cumulative).
 */
export class GeminiStreamTranslator {
  /** The upstream responseId (for tool-call ids), from the first chunk that has one. */
  private responseId: string | undefined;
  /** The completion id of every chunk: fixed by the first chunk. */
  private id: string | undefined;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly candidates = new Map<number, CandidateState>();
  private usage: GeminiUsageMetadata | undefined;
  private blocked = false;

  constructor(private readonly modelId: string) {}

  /** The chunks one upstream chunk produces. */
  accept(body: GeminiResponse): ChatChunk[] {
    this.responseId ??= body.responseId;
    this.id ??= completionId(body.responseId);
    if (body.usageMetadata) this.usage = body.usageMetadata;
    const chunks: ChatChunk[] = [];
    const candidates = body.candidates ?? [];
    if (candidates.length === 0 && body.promptFeedback?.blockReason && this.candidates.size === 0) {
      this.blocked = true;
      chunks.push(this.chunk({ index: 0, finish_reason: 'FINISH_REASON_CONTENT_FILTER', delta: { role: 'ROLE_ASSISTANT', content: '', tool_calls: [] } }));
      return chunks;
    }
    candidates.forEach((candidate, position) => {
      const index = candidate.index ?? position;
      let state = this.candidates.get(index);
      const first = state === undefined;
      if (!state) {
        state = { calls: 0, finished: false };
        this.candidates.set(index, state);
      }
      const parts = answerParts(candidate);
      const text = parts.flatMap((part) => (typeof part.text === 'string' ? [part.text] : [])).join('');
      const toolCalls: ToolCallDelta[] = parts.flatMap((part) => {
        if (!part.functionCall) return [];
        const callIndex = state.calls++;
        return [
          {
            index: callIndex,
            id: toolCallId(this.responseId ?? '', index, callIndex, part.functionCall),
            type: 'function',
            function: { name: part.functionCall.name, arguments: JSON.stringify(part.functionCall.args ?? {}) },
          },
        ];
      });
      if (first || text !== '' || toolCalls.length > 0) {
        chunks.push(
          this.chunk({
            index,
            finish_reason: 'FINISH_REASON_UNSPECIFIED',
            delta: { ...(first ? { role: 'ROLE_ASSISTANT' } : {}), ...(text !== '' || first ? { content: text } : {}), tool_calls: toolCalls },
          }),
        );
      }
      const reason = mapFinishReason(candidate.finishReason, state.calls > 0);
      if (reason !== 'FINISH_REASON_UNSPECIFIED' && !state.finished) {
        state.finished = true;
        chunks.push(this.chunk({ index, finish_reason: reason, delta: { tool_calls: [] } }));
      }
    });
    return chunks;
  }

  /** True when every candidate seen has finished (or the prompt was blocked): the stream is whole. */
  get complete(): boolean {
    if (this.blocked) return true;
    return this.candidates.size > 0 && [...this.candidates.values()].every((state) => state.finished);
  }

  /** The usage of the whole stream so far. */
  totalUsage(): Usage {
    return mapUsage(this.usage);
  }

  private chunk(choice: ChunkChoice): ChatChunk {
    return { id: this.id ?? completionId(undefined), created: this.created, model: this.modelId, choices: [choice] };
  }
}

/**
 * Finish-reason, usage and log-probability mapping, and OpenAI responses and chunks -> gateway
 * ChatResponse and ChatChunk. The gateway reports its catalog model id as `model`, not the
 * upstream's name, so a caller sees the id it can send again.
 */
import type { ChatChunk, ChatResponse, ChoiceLogprobs, RoleOutput, TokenLogprob, TokenLogprobList, TopLogprob, Usage } from '@gateway/proto';
import { finishReasonMapper, type FinishReasonMapper } from '../finish-reasons.js';
import type { OpenAiChatChunk, OpenAiChatResponse, OpenAiChoiceLogprobs, OpenAiTokenLogprob, OpenAiTopLogprob, OpenAiUsage } from './wire-types.js';

/**
 * OpenAI finish reasons, plus the variants some compatible servers send: Mistral's `model_length`
 * and vLLM's `abort` (mapped to `length` and `stop`, the closest a client understands).
 */
export const mapFinishReason: FinishReasonMapper = finishReasonMapper({
  stop: 'FINISH_REASON_STOP',
  eos: 'FINISH_REASON_STOP',
  end_turn: 'FINISH_REASON_STOP',
  abort: 'FINISH_REASON_STOP',
  length: 'FINISH_REASON_LENGTH',
  model_length: 'FINISH_REASON_LENGTH',
  max_tokens: 'FINISH_REASON_LENGTH',
  tool_calls: 'FINISH_REASON_TOOL_CALLS',
  content_filter: 'FINISH_REASON_CONTENT_FILTER',
  function_call: 'FINISH_REASON_FUNCTION_CALL',
});

/**
 * CompletionUsage -> Usage, with cached prompt tokens and reasoning tokens from the *_details
 * objects. OpenAI's prompt cache costs nothing to fill and reports no writes: cache_write_tokens
 * stays 0.
 */
export function mapUsage(usage: OpenAiUsage): Usage {
  const prompt = usage.prompt_tokens ?? 0;
  const completion = usage.completion_tokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: usage.total_tokens ?? prompt + completion,
    cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}

/** A token's UTF-8 bytes; null (no byte representation) and anything that is not a byte become an empty list. */
function mapBytes(bytes: unknown): number[] {
  return Array.isArray(bytes) ? bytes.filter((value): value is number => Number.isInteger(value) && value >= 0 && value <= 255) : [];
}

function mapTopLogprob(entry: OpenAiTopLogprob): TopLogprob {
  return { token: entry.token ?? '', logprob: entry.logprob ?? 0, bytes: mapBytes(entry.bytes) };
}

function mapTokenLogprob(entry: OpenAiTokenLogprob): TokenLogprob {
  return { ...mapTopLogprob(entry), top_logprobs: (entry.top_logprobs ?? []).map(mapTopLogprob) };
}

function mapTokenList(list: OpenAiTokenLogprob[] | null | undefined): TokenLogprobList | undefined {
  return Array.isArray(list) ? { tokens: list.map(mapTokenLogprob) } : undefined;
}

/**
 * A choice's `logprobs` (whole, or one chunk's tokens) -> ChoiceLogprobs; undefined when the
 * upstream sent null or nothing. A null `content` or `refusal` stays absent, so the edge writes
 * null where the upstream did and `[]` where it sent an empty list.
 */
export function mapLogprobs(logprobs: OpenAiChoiceLogprobs | null | undefined): ChoiceLogprobs | undefined {
  if (typeof logprobs !== 'object' || logprobs === null) return undefined;
  const content = mapTokenList(logprobs.content);
  const refusal = mapTokenList(logprobs.refusal);
  return { ...(content ? { content } : {}), ...(refusal ? { refusal } : {}) };
}

function mapRole(role: string | null | undefined): RoleOutput | undefined {
  return role === 'assistant' ? 'ROLE_ASSISTANT' : undefined;
}

/**
 * What a whole response and a chunk share: the id, the time (now when not sent), the catalog model
 * id, the fingerprint, and their choices. (Built as one literal: on the stream path this runs for
 * every chunk, and spreading an object made elsewhere costs several times a literal's allocation.)
 */
function withHeader<Choice>(body: OpenAiChatResponse | OpenAiChatChunk, modelId: string, choices: Choice[]) {
  return {
    id: body.id ?? '',
    created: body.created ?? Math.floor(Date.now() / 1000),
    model: modelId,
    choices,
    ...(body.system_fingerprint ? { system_fingerprint: body.system_fingerprint } : {}),
  };
}

/**
 * A whole choice and a chunk's choice alike: the index (its position when not sent), the finish
 * reason, the log probabilities, and what the choice carries under `field` (a whole response's
 * message, a chunk's delta), whose content and refusal are set when the upstream sent them as strings.
 */
function choiceOf<Field extends 'message' | 'delta', Carried extends { content?: string; refusal?: string }>(
  choice: { index?: number; logprobs?: OpenAiChoiceLogprobs | null; finish_reason?: string | null },
  position: number,
  field: Field,
  texts: { content?: string | null; refusal?: string | null },
  carried: Carried,
) {
  if (typeof texts.content === 'string') carried.content = texts.content;
  if (typeof texts.refusal === 'string') carried.refusal = texts.refusal;
  const logprobs = mapLogprobs(choice.logprobs);
  const mapped = { index: choice.index ?? position, finish_reason: mapFinishReason(choice.finish_reason), ...(logprobs ? { logprobs } : {}) };
  return Object.assign(mapped, { [field]: carried } as { [key in Field]: Carried });
}

/** A whole response; `model` is the catalog id. Returns undefined usage when the upstream sent none. */
export function fromOpenAiResponse(body: OpenAiChatResponse, modelId: string): ChatResponse {
  const choices = (body.choices ?? []).map((choice, position) => {
    const message = choice.message ?? {};
    return choiceOf(choice, position, 'message', message, {
      tool_calls: (message.tool_calls ?? []).map((call) => ({
        id: call.id,
        type: call.type ?? 'function',
        function: { name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' },
      })),
    } as NonNullable<ChatResponse['choices']>[number]['message'] & { content?: string; refusal?: string });
  });
  const response: ChatResponse = withHeader(body, modelId, choices);
  if (body.usage) response.usage = mapUsage(body.usage);
  return response;
}

/** One chunk's choices; the usage, when the chunk carries it, is read separately by usageOfChunk. */
export function fromOpenAiChunk(body: OpenAiChatChunk, modelId: string): ChatChunk {
  const choices = (body.choices ?? []).map((choice, position) => {
    const delta = choice.delta ?? {};
    const role = mapRole(delta.role);
    return choiceOf(choice, position, 'delta', delta, {
      ...(role ? { role } : {}),
      tool_calls: (delta.tool_calls ?? []).map((call, callPosition) => ({
        index: call.index ?? callPosition,
        ...(call.id ? { id: call.id } : {}),
        ...(call.type ? { type: call.type } : {}),
        function: {
          ...(typeof call.function?.name === 'string' ? { name: call.function.name } : {}),
          ...(typeof call.function?.arguments === 'string' ? { arguments: call.function.arguments } : {}),
        },
      })),
    } as NonNullable<ChatChunk['choices']>[number]['delta'] & { content?: string; refusal?: string });
  });
  return withHeader(body, modelId, choices);
}

/** The usage a chunk carries (OpenAI's `usage`, Groq's `x_groq.usage`), if any. */
export function usageOfChunk(body: OpenAiChatChunk): Usage | undefined {
  const usage = body.usage ?? body.x_groq?.usage;
  return usage ? mapUsage(usage) : undefined;
}

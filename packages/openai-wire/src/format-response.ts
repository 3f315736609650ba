/**
 * Writes protobuf responses and chunks as OpenAI's JSON, exactly in the shape real clients read
 * (see CLIENT_COMPATIBILITY.md): every choice key present, `arguments` as strings, `usage` with
 * its details objects, null where OpenAI sends null.
 */
import type {
  ChatChunkOutput,
  ChatResponseOutput,
  ChoiceLogprobsOutput,
  ContentPartOutput,
  DeltaOutput,
  FinishReasonOutput,
  TokenLogprobListOutput,
  TopLogprobOutput,
  UsageOutput,
} from '@gateway/proto';

/** The `gateway` object added to every non-streamed response and to a stream's last chunk. */
export interface GatewayInfo {
  routed_to: string;
  /**
   * The provider of the deployment that answered (`openai-compatible`, `anthropic`, `azure`, ...),
   * which priced it: a model served by several providers says which one; absent when unknown.
   */
  provider?: string;
  latency_ms: number;
  cost_usd: number;
  /** Set when the model was chosen by `auto`. */
  auto?: { score: number | null; policy: string; tier: string | null; reason: string | null };
  /** Models passed over before the one that answered (fallbacks), each with why. */
  tried?: Array<{ model: string; reason: string }>;
  /**
   * The guardrail decisions made for the request, in order: which policy's check did what at
   * which point (`input`, `output`), and what kind of thing it found; never the text. `error` is
   * set for a check that could not run (its policy's on_error then decided).
   */
  guardrails?: Array<{ policy: string; check: string; point: string; action: string; enforced: boolean; entity: string; error?: string }>;
  /**
   * What the response cache did, when its settings cover the request: `hit` (answered from the
   * cache, with the entry's age, and for a semantic hit the cosine similarity of the kept
   * question to this one), `miss` (looked up, not found; the answer is kept once complete), or
   * `skip` (not looked up: the caller's Cache-Control, sampling above the threshold).
   */
  cache?: { status: 'hit' | 'miss' | 'skip'; age_ms?: number; similarity?: number };
}

const FINISH_REASONS: Record<FinishReasonOutput, string | null> = {
  FINISH_REASON_UNSPECIFIED: null,
  FINISH_REASON_STOP: 'stop',
  FINISH_REASON_LENGTH: 'length',
  FINISH_REASON_TOOL_CALLS: 'tool_calls',
  FINISH_REASON_CONTENT_FILTER: 'content_filter',
  FINISH_REASON_FUNCTION_CALL: 'function_call',
};

/** The OpenAI finish_reason of a protobuf one; null while a choice goes on. */
export function finishReason(reason: FinishReasonOutput | undefined): string | null {
  return reason === undefined ? null : (FINISH_REASONS[reason] ?? null);
}

/**
 * The token counts of a usage, 0 for each it leaves out; its total, or prompt plus completion
 * without one. `cacheWriteDetail` is `{ cache_write_tokens }` (the prompt tokens written to the
 * provider's cache, as OpenRouter reports them) only when the provider wrote some, else empty:
 * clients ignore a field they do not know, and an answer without cache writes keeps OpenAI's exact
 * shape.
 */
export function usageCounts(usage: UsageOutput | undefined | null) {
  const prompt = usage?.prompt_tokens ?? 0;
  const completion = usage?.completion_tokens ?? 0;
  const cacheWrites = usage?.cache_write_tokens ?? 0;
  return {
    prompt,
    completion,
    total: usage?.total_tokens || prompt + completion,
    cached: usage?.cached_tokens ?? 0,
    reasoning: usage?.reasoning_tokens ?? 0,
    cacheWriteDetail: cacheWrites > 0 ? { cache_write_tokens: cacheWrites } : {},
  };
}

/** OpenAI's usage object, details included (`prompt_tokens_details.cache_write_tokens` as usageCounts says). */
export function usageJson(usage: UsageOutput | undefined | null) {
  const counts = usageCounts(usage);
  return {
    prompt_tokens: counts.prompt,
    completion_tokens: counts.completion,
    total_tokens: counts.total,
    prompt_tokens_details: { cached_tokens: counts.cached, audio_tokens: 0, ...counts.cacheWriteDetail },
    completion_tokens_details: {
      reasoning_tokens: counts.reasoning,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** One ChatCompletionTokenLogprob or top_logprobs entry; an empty byte list is a token without bytes (null). */
function topLogprobJson(entry: TopLogprobOutput) {
  return { token: entry.token ?? '', logprob: entry.logprob ?? 0, bytes: entry.bytes?.length > 0 ? entry.bytes : null };
}

// Repeated fields are read with `?? []` throughout: the executor renders chunks from the objects
// its adapters build, which leave empty lists out, as well as from decoded messages.
function tokenListJson(list: TokenLogprobListOutput | undefined | null) {
  return list ? (list.tokens ?? []).map((entry) => ({ ...topLogprobJson(entry), top_logprobs: (entry.top_logprobs ?? []).map(topLogprobJson) })) : null;
}

/**
 * A choice's `logprobs`: null when the provider reported none (or the caller did not ask), else
 * `{ content, refusal }`, each a token list or null as the provider sent it. In a chunk it holds
 * that chunk's tokens only.
 */
export function logprobsJson(logprobs: ChoiceLogprobsOutput | undefined | null) {
  if (!logprobs) return null;
  return { content: tokenListJson(logprobs.content), refusal: tokenListJson(logprobs.refusal) };
}

/**
 * An answer's thinking blocks as OpenAI-compatible servers show reasoning: `reasoning_content`
 * (the thinking text joined) and `thinking_blocks` (each block whole, signature included, as
 * LiteLLM writes them). Nothing when the answer has none, so OpenAI's exact shape stays.
 */
function reasoningJson(blocks: ContentPartOutput[] | undefined) {
  if (!blocks?.length) return {};
  const thinkingBlocks = blocks.map((part) =>
    part.redacted_thinking
      ? { type: 'redacted_thinking', data: part.redacted_thinking.data ?? '' }
      : { type: 'thinking', thinking: part.thinking?.thinking ?? '', signature: part.thinking?.signature ?? '' },
  );
  return { reasoning_content: blocks.map((part) => part.thinking?.thinking ?? '').join(''), thinking_blocks: thinkingBlocks };
}

/**
 * A whole response as OpenAI's `chat.completion` object. For a caller of the deprecated
 * `functions` (legacyFunctions), the first tool call is `message.function_call` and the finish
 * reason `function_call`, as that API answered.
 */
export function chatCompletionJson(response: ChatResponseOutput, gateway: GatewayInfo, legacyFunctions = false) {
  return {
    id: response.id,
    object: 'chat.completion',
    created: response.created ?? 0,
    model: response.model,
    choices: response.choices.map((choice) => {
      const message = choice.message;
      const toolCalls = message?.tool_calls ?? [];
      const functionOf = (call: (typeof toolCalls)[number]) => ({ name: call.function?.name ?? '', arguments: call.function?.arguments ?? '' });
      const calls =
        toolCalls.length === 0
          ? {}
          : legacyFunctions
            ? { function_call: functionOf(toolCalls[0]!) }
            : { tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: functionOf(call) })) };
      const finish = finishReason(choice.finish_reason) ?? 'stop';
      return {
        index: choice.index ?? 0,
        message: {
          role: 'assistant',
          content: message?.content ?? null,
          refusal: message?.refusal ?? null,
          ...reasoningJson(message?.thinking?.blocks),
          ...calls,
          annotations: [],
        },
        logprobs: logprobsJson(choice.logprobs),
        finish_reason: legacyFunctions && finish === 'tool_calls' ? 'function_call' : finish,
      };
    }),
    usage: usageJson(response.usage),
    system_fingerprint: response.system_fingerprint ?? null,
    gateway,
  };
}

function deltaJson(delta: DeltaOutput | undefined, legacyFunctions: boolean) {
  const out: Record<string, unknown> = {};
  if (!delta) return out;
  if (delta.role === 'ROLE_ASSISTANT') out.role = 'assistant';
  if (delta.content !== undefined) out.content = delta.content;
  if (delta.refusal !== undefined) out.refusal = delta.refusal;
  // Extended thinking, as OpenAI-compatible servers stream reasoning (`reasoning_content`), with
  // the block's signature and redacted blocks as the gateway's own fields.
  if (delta.thinking !== undefined) out.reasoning_content = delta.thinking;
  if (delta.thinking_signature !== undefined) out.thinking_signature = delta.thinking_signature;
  if (delta.redacted_thinking !== undefined) out.redacted_thinking = delta.redacted_thinking;
  if (legacyFunctions) {
    // The deprecated API streamed one call: the name once, then argument fragments.
    const call = (delta.tool_calls ?? []).find((entry) => (entry.index ?? 0) === 0);
    if (call) out.function_call = { ...(call.function?.name !== undefined ? { name: call.function.name } : {}), arguments: call.function?.arguments ?? '' };
  } else if (delta.tool_calls?.length > 0) {
    out.tool_calls = delta.tool_calls.map((call) => {
      const entry: Record<string, unknown> = { index: call.index ?? 0 };
      if (call.id !== undefined) entry.id = call.id;
      if (call.type !== undefined) entry.type = call.type;
      const fn: Record<string, string> = {};
      if (call.function?.name !== undefined) fn.name = call.function.name;
      fn.arguments = call.function?.arguments ?? '';
      entry.function = fn;
      return entry;
    });
  }
  return out;
}

/** The fields every chunk of one stream shares. */
export interface StreamIdentity {
  id: string;
  created: number;
  model: string;
  includeUsage: boolean;
  /** The caller used the deprecated `functions`: calls go out as `delta.function_call`. */
  legacyFunctions?: boolean;
}

/** One streamed chunk as OpenAI's `chat.completion.chunk` object. */
export function chunkJson(chunk: ChatChunkOutput, identity: StreamIdentity, gateway?: GatewayInfo) {
  return {
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    system_fingerprint: chunk.system_fingerprint ?? null,
    choices: (chunk.choices ?? []).map((choice) => {
      const finish = finishReason(choice.finish_reason);
      return {
        index: choice.index ?? 0,
        delta: deltaJson(choice.delta, identity.legacyFunctions === true),
        logprobs: logprobsJson(choice.logprobs),
        finish_reason: identity.legacyFunctions && finish === 'tool_calls' ? 'function_call' : finish,
      };
    }),
    ...(identity.includeUsage ? { usage: null } : {}),
    ...(gateway ? { gateway } : {}),
  };
}

/** The usage chunk sent before [DONE] when the caller set stream_options.include_usage. */
export function usageChunkJson(usage: UsageOutput | undefined, identity: StreamIdentity, gateway?: GatewayInfo) {
  return {
    id: identity.id,
    object: 'chat.completion.chunk',
    created: identity.created,
    model: identity.model,
    system_fingerprint: null,
    choices: [],
    usage: usageJson(usage),
    ...(gateway ? { gateway } : {}),
  };
}

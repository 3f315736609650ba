/**
 * The Messages API's output shapes (the `message` object, its content blocks, its usage, stop
 * reasons and the error envelope), as Anthropic's published types (@anthropic-ai/sdk's
 * resources/messages) declare them; shared by the whole answer (messages-wire.ts) and the stream
 * (messages-stream.ts).
 */
import { randomUUID } from 'node:crypto';
import type { ContentPartOutput, UsageOutput } from '@gateway/proto';
import { headerKey } from '../auth/key-check.js';
import type { WireErrors } from '../wire-errors.js';
import type { RequestError } from '../errors.js';

/** A new id of a message (`msg_`) or of a tool use the upstream did not name (`toolu_`). */
export function newMessageId(prefix: 'msg' | 'toolu' = 'msg'): string {
  return `${prefix}_${randomUUID().replaceAll('-', '')}`;
}

/**
 * A message's `stop_reason`, from the chat finish reason that ended it. A `stop` is `end_turn`:
 * upstreams do not say whether a stop sequence ended the text, so `stop_sequence` is never reported.
 */
export function stopReason(finish: string | null | undefined): string {
  switch (finish) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return 'end_turn';
  }
}

/**
 * The Messages usage object, as Anthropic defines it: `input_tokens` is the plain input only, apart
 * from cache reads (`cache_read_input_tokens`) and cache writes (`cache_creation_input_tokens`,
 * split by lifetime in `cache_creation`).
 */
export function messageUsage(usage: UsageOutput | undefined | null) {
  const cached = usage?.cached_tokens ?? 0;
  const written = usage?.cache_write_tokens ?? 0;
  return {
    input_tokens: Math.max(0, (usage?.prompt_tokens ?? 0) - cached - written),
    output_tokens: usage?.completion_tokens ?? 0,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: cached,
    cache_creation: { ephemeral_5m_input_tokens: usage?.cache_write_5m_tokens ?? 0, ephemeral_1h_input_tokens: usage?.cache_write_1h_tokens ?? 0 },
  };
}

/** A thinking part of an answer as its Messages block: `thinking` with its signature, or `redacted_thinking`. */
export function thinkingBlock(part: ContentPartOutput): Record<string, unknown> {
  if (part.redacted_thinking) return { type: 'redacted_thinking', data: part.redacted_thinking.data ?? '' };
  return { type: 'thinking', thinking: part.thinking?.thinking ?? '', signature: part.thinking?.signature ?? '' };
}

/** A tool call's arguments as the `input` object of a tool_use block (an unparsable string kept under `arguments`). */
export function toolInput(args: string): Record<string, unknown> {
  if (args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { arguments: parsed };
  } catch {
    return { arguments: args };
  }
}

/**
 * Anthropic's error type of a status. A 503 (a model or service unavailable) is `overloaded_error`,
 * left at status 503: Anthropic's SDK retries every 5xx (and 408, 409, 429) with its back-off and
 * honours `retry-after`, so a 503 is retried as its 529 is.
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** The JSON of an error in Anthropic's envelope: `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorJson(error: RequestError): string {
  return JSON.stringify({ type: 'error', error: { type: anthropicErrorType(error.status), message: error.message } });
}

/** How every route of the Messages API answers errors and reads its key. */
export const messagesErrors: WireErrors = {
  renderError: anthropicErrorJson,
  readKey: headerKey,
};

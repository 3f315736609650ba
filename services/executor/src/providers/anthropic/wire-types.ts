/**
 * Anthropic's Messages API wire format (POST /v1/messages, anthropic-version 2023-06-01), as far as
 * this adapter writes and reads it; names follow Anthropic's published API reference (Messages,
 * Streaming Messages, Errors).
 */

/** Where an image or document comes from. */
export type AnthropicSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

/** A prompt-cache breakpoint: the prompt up to and including the block is cached. */
export interface AnthropicCacheControl {
  type: 'ephemeral';
  /** The entry's lifetime; absent: 5 minutes. */
  ttl?: '5m' | '1h';
}

/** What any request block may carry. */
interface Cacheable {
  cache_control?: AnthropicCacheControl;
}

/** A text block. */
export interface AnthropicTextBlock extends Cacheable {
  type: 'text';
  text: string;
}
/** An image block (jpeg, png, gif, webp). */
export interface AnthropicImageBlock extends Cacheable {
  type: 'image';
  source: AnthropicSource;
}
/** A PDF document block. */
export interface AnthropicDocumentBlock extends Cacheable {
  type: 'document';
  source: AnthropicSource;
}
/** A tool call the assistant made; `input` is an object. */
export interface AnthropicToolUseBlock extends Cacheable {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}
/** The result of a tool call, sent in a user message. */
export interface AnthropicToolResultBlock extends Cacheable {
  type: 'tool_result';
  tool_use_id: string;
  content: string | Array<AnthropicTextBlock | AnthropicImageBlock>;
  is_error?: boolean;
}

/** A thinking block of an earlier assistant turn, sent back exactly as the model wrote and signed it. */
export interface AnthropicThinkingBlock extends Cacheable {
  type: 'thinking';
  thinking: string;
  signature: string;
}
/** An encrypted thinking block of an earlier assistant turn, sent back as it came. */
export interface AnthropicRedactedThinkingBlock extends Cacheable {
  type: 'redacted_thinking';
  data: string;
}

/** A content block of a request message. */
export type AnthropicContentBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicToolUseBlock
  | AnthropicToolResultBlock
  | AnthropicThinkingBlock
  | AnthropicRedactedThinkingBlock;

/** Extended thinking: with a budget, left to the model (`adaptive`), or off. */
export type AnthropicThinking = { type: 'enabled'; budget_tokens: number } | { type: 'adaptive' } | { type: 'disabled' };

/** A request message; roles alternate, starting with user. */
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicContentBlock[];
}

/** A client tool. */
export interface AnthropicTool extends Cacheable {
  name: string;
  description?: string;
  input_schema: unknown;
}

/** How the model may use tools. */
export type AnthropicToolChoice =
  | { type: 'auto'; disable_parallel_tool_use?: boolean }
  | { type: 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean }
  | { type: 'none' };

/** The request body of POST /v1/messages. */
export interface AnthropicRequest {
  model: string;
  max_tokens: number;
  messages: AnthropicMessage[];
  /** One string, or text blocks when one of them carries a cache breakpoint. */
  system?: string | AnthropicTextBlock[];
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  metadata?: { user_id?: string };
  thinking?: AnthropicThinking;
  stream?: boolean;
}

/** Token counts; input_tokens excludes the cached and cache-written parts. */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  /** Tokens written to the prompt cache, both lifetimes together. */
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  /** cache_creation_input_tokens split by the cache entry's lifetime (absent from older answers). */
  cache_creation?: AnthropicCacheCreation | null;
}

/** Cache writes by lifetime: 5 minutes (the default) and 1 hour (`ttl: "1h"`). */
export interface AnthropicCacheCreation {
  ephemeral_5m_input_tokens?: number | null;
  ephemeral_1h_input_tokens?: number | null;
}

/** A content block of a response; other types (server tools, added later) are skipped. */
export type AnthropicResponseBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input?: unknown }
  | { type: 'thinking'; thinking?: string; signature?: string }
  | { type: 'redacted_thinking'; data?: string }
  | { type: string; [field: string]: unknown };

/** A whole Message. */
export interface AnthropicResponse {
  id?: string;
  type?: string;
  role?: string;
  model?: string;
  content?: AnthropicResponseBlock[];
  /** end_turn, max_tokens, stop_sequence, tool_use, pause_turn, refusal. */
  stop_reason?: string | null;
  stop_sequence?: string | null;
  usage?: AnthropicUsage;
}

/** The `error` object of the error envelope `{ type: "error", error: { type, message } }`. */
export interface AnthropicError {
  /** invalid_request_error, authentication_error, permission_error, not_found_error, request_too_large, rate_limit_error, api_error, overloaded_error. */
  type?: string;
  message?: string;
}

/** One event of a Messages stream (`event:` name = `type`). */
export type AnthropicStreamEvent =
  | { type: 'message_start'; message: AnthropicResponse }
  | { type: 'content_block_start'; index: number; content_block: AnthropicResponseBlock }
  | {
      type: 'content_block_delta';
      index: number;
      delta:
        | { type: 'text_delta'; text: string }
        | { type: 'input_json_delta'; partial_json: string }
        | { type: 'thinking_delta'; thinking: string }
        | { type: 'signature_delta'; signature: string }
        | { type: string; [field: string]: unknown };
    }
  | { type: 'content_block_stop'; index: number }
  | { type: 'message_delta'; delta: { stop_reason?: string | null; stop_sequence?: string | null }; usage?: AnthropicUsage }
  | { type: 'message_stop' }
  | { type: 'ping' }
  | { type: 'error'; error: AnthropicError };

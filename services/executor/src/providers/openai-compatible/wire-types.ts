/**
 * The OpenAI chat-completions wire format, as far as this adapter writes and reads it; field names
 * follow OpenAI's published OpenAPI document (CreateChatCompletionRequest / Response /
 * StreamResponse, CompletionUsage, ErrorResponse). Every provider behind this adapter (OpenAI,
 * Groq, Together, Mistral, DeepSeek, vLLM, Ollama) speaks it; fields some of them add are optional.
 */

/** A content part of a request message. */
export type OpenAiContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string; detail?: string } }
  | { type: 'input_audio'; input_audio: { data: string; format: string } }
  | { type: 'file'; file: { file_id?: string; file_data?: string; filename?: string } }
  | { type: 'refusal'; refusal: string };

/** A tool call as the assistant made it; arguments is a JSON string. */
export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A request message. */
export interface OpenAiMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | OpenAiContentPart[] | null;
  name?: string;
  tool_calls?: OpenAiToolCall[];
  tool_call_id?: string;
  refusal?: string;
}

/** A function tool offered to the model. */
export interface OpenAiTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown; strict?: boolean };
}

/** The request body of POST /chat/completions. */
export interface OpenAiChatRequest {
  model: string;
  messages: OpenAiMessage[];
  temperature?: number;
  top_p?: number;
  n?: number;
  stop?: string[];
  max_tokens?: number;
  max_completion_tokens?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  tools?: OpenAiTool[];
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };
  parallel_tool_calls?: boolean;
  response_format?:
    | { type: 'text' }
    | { type: 'json_object' }
    | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: unknown; strict?: boolean } };
  stream?: boolean;
  stream_options?: { include_usage: boolean };
  user?: string;
  logprobs?: boolean;
  top_logprobs?: number;
  logit_bias?: Record<string, number>;
  reasoning_effort?: string;
  service_tier?: string;
}

/** CompletionUsage. */
export interface OpenAiUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/** The assistant message of a whole response. */
export interface OpenAiResponseMessage {
  role?: string;
  content?: string | null;
  refusal?: string | null;
  tool_calls?: OpenAiToolCall[] | null;
}

/** One of the most likely tokens at a position (a `top_logprobs` entry). `bytes` is null for a token with no byte representation. */
export interface OpenAiTopLogprob {
  token?: string;
  logprob?: number;
  bytes?: number[] | null;
}

/** ChatCompletionTokenLogprob: one generated token with the most likely tokens at its position. */
export interface OpenAiTokenLogprob extends OpenAiTopLogprob {
  top_logprobs?: OpenAiTopLogprob[] | null;
}

/** A choice's `logprobs` object; in a stream chunk it holds that chunk's tokens. */
export interface OpenAiChoiceLogprobs {
  content?: OpenAiTokenLogprob[] | null;
  refusal?: OpenAiTokenLogprob[] | null;
}

/** A whole chat completion. */
export interface OpenAiChatResponse {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices?: Array<{ index?: number; message?: OpenAiResponseMessage; logprobs?: OpenAiChoiceLogprobs | null; finish_reason?: string | null }>;
  usage?: OpenAiUsage | null;
  system_fingerprint?: string | null;
}

/** One streamed tool-call fragment. */
export interface OpenAiToolCallChunk {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string | null; arguments?: string | null };
}

/** One chat.completion.chunk. Groq reports usage under x_groq.usage. */
export interface OpenAiChatChunk {
  id?: string;
  object?: string;
  created?: number;
  model?: string;
  choices?: Array<{
    index?: number;
    delta?: { role?: string | null; content?: string | null; refusal?: string | null; tool_calls?: OpenAiToolCallChunk[] | null };
    logprobs?: OpenAiChoiceLogprobs | null;
    finish_reason?: string | null;
  }>;
  usage?: OpenAiUsage | null;
  system_fingerprint?: string | null;
  x_groq?: { usage?: OpenAiUsage | null };
  /** Some providers send an error record inside a 200 stream. */
  error?: OpenAiError;
}

/** The `error` object of an ErrorResponse. */
export interface OpenAiError {
  message?: string;
  type?: string;
  param?: string | null;
  code?: string | number | null;
}

/** OpenAI's CreateEmbeddingRequest, as this adapter sends it (always `encoding_format: base64`: a quarter of the bytes of JSON numbers). */
export interface OpenAiEmbeddingRequest {
  model: string;
  /** Strings, or arrays of token ids. */
  input: string[] | number[][];
  encoding_format: 'base64' | 'float';
  dimensions?: number;
  user?: string;
}

/** OpenAI's CreateEmbeddingResponse: `embedding` is base64 float32 when asked so, else numbers (a server that ignores the encoding). */
export interface OpenAiEmbeddingResponse {
  object?: 'list';
  data?: { object?: 'embedding'; index?: number; embedding?: string | number[] }[];
  model?: string;
  usage?: { prompt_tokens?: number; total_tokens?: number };
}

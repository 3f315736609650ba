/**
 * Amazon Bedrock's Converse API wire format (POST /model/{modelId}/converse and
 * /model/{modelId}/converse-stream), as far as this adapter writes and reads it; names follow the
 * Bedrock Runtime API reference and the shapes of @aws-sdk/client-bedrock-runtime. Blobs (image,
 * document and redacted reasoning bytes) travel as base64 strings in the JSON.
 */

/** A prompt-cache breakpoint: the prompt up to the block before it is cached. */
export interface ConverseCachePoint {
  cachePoint: { type: 'default' };
}

/** Reasoning the model wrote (with the signature that proves it) or its encrypted form. */
export type ConverseReasoningContent = { reasoningText: { text: string; signature?: string } } | { redactedContent: string };

/** What a tool result holds. */
export type ConverseToolResultContent = { text: string } | { image: ConverseImage } | { json: unknown };

/** An image given by its bytes. */
export interface ConverseImage {
  format: 'png' | 'jpeg' | 'gif' | 'webp';
  source: { bytes: string };
}

/** A content block of a message. */
export type ConverseContentBlock =
  | { text: string }
  | { image: ConverseImage }
  | { document: { format: string; name: string; source: { bytes: string } } }
  | { toolUse: { toolUseId: string; name: string; input: unknown } }
  | { toolResult: { toolUseId: string; content: ConverseToolResultContent[]; status?: 'success' | 'error' } }
  | { reasoningContent: ConverseReasoningContent }
  | ConverseCachePoint;

/** A message; roles alternate, starting with user. */
export interface ConverseMessage {
  role: 'user' | 'assistant';
  content: ConverseContentBlock[];
}

/** A block of the system prompt. */
export type ConverseSystemBlock = { text: string } | ConverseCachePoint;

/** A tool, or a cache breakpoint after the tools before it. */
export type ConverseTool = { toolSpec: { name: string; description?: string; inputSchema: { json: unknown } } } | ConverseCachePoint;

/** How the model may use tools (Converse has no "none": the tools are then not offered). */
export type ConverseToolChoice = { auto: Record<string, never> } | { any: Record<string, never> } | { tool: { name: string } };

/** The body of Converse and ConverseStream (the model id is in the path). */
export interface ConverseRequest {
  messages: ConverseMessage[];
  system?: ConverseSystemBlock[];
  inferenceConfig?: { maxTokens?: number; temperature?: number; topP?: number; stopSequences?: string[] };
  toolConfig?: { tools: ConverseTool[]; toolChoice?: ConverseToolChoice };
  /** Fields of the model's own request body: Claude's `thinking` and `anthropic_beta`. */
  additionalModelRequestFields?: Record<string, unknown>;
}

/** Token counts; inputTokens excludes the tokens read from and written to the prompt cache. */
export interface ConverseUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** A content block of an answer. */
export interface ConverseResponseBlock {
  text?: string;
  toolUse?: { toolUseId?: string; name?: string; input?: unknown };
  reasoningContent?: { reasoningText?: { text?: string; signature?: string }; redactedContent?: string };
  [field: string]: unknown;
}

/**
 * Why the model stopped: end_turn, tool_use, max_tokens, stop_sequence, guardrail_intervened,
 * content_filtered, model_context_window_exceeded.
 */
export type ConverseStopReason = string;

/** The answer of Converse. */
export interface ConverseResponse {
  output?: { message?: { role?: string; content?: ConverseResponseBlock[] } };
  stopReason?: ConverseStopReason;
  usage?: ConverseUsage;
  metrics?: { latencyMs?: number };
  additionalModelResponseFields?: unknown;
}

/** The payload of each event of a ConverseStream answer, by its `:event-type` header. */
export interface ConverseStreamEvents {
  messageStart: { role?: string };
  contentBlockStart: { contentBlockIndex: number; start?: { toolUse?: { toolUseId?: string; name?: string } } };
  contentBlockDelta: {
    contentBlockIndex: number;
    delta?: {
      text?: string;
      toolUse?: { input?: string };
      reasoningContent?: { text?: string; signature?: string; redactedContent?: string };
    };
  };
  contentBlockStop: { contentBlockIndex: number };
  messageStop: { stopReason?: ConverseStopReason; additionalModelResponseFields?: unknown };
  metadata: { usage?: ConverseUsage; metrics?: { latencyMs?: number } };
}

/** One decoded event of a ConverseStream answer. */
export type ConverseStreamEvent = { [Type in keyof ConverseStreamEvents]: { type: Type; payload: ConverseStreamEvents[Type] } }[keyof ConverseStreamEvents];

/** The JSON body of an error answer (`message`; some services spell it `Message`); its type is in `x-amzn-errortype`. */
export interface BedrockErrorBody {
  message?: string;
  Message?: string;
}

/** InvokeModel's body for Amazon Titan Text Embeddings (V1 takes inputText only). */
export interface TitanEmbedRequest {
  inputText: string;
  dimensions?: number;
  normalize?: boolean;
}

/** InvokeModel's answer from Amazon Titan Text Embeddings. */
export interface TitanEmbedResponse {
  embedding?: number[];
  inputTextTokenCount?: number;
}

/** InvokeModel's body for Cohere Embed on Bedrock. */
export interface CohereEmbedRequest {
  texts: string[];
  input_type: 'search_document' | 'search_query' | 'classification' | 'clustering';
  truncate?: 'NONE' | 'START' | 'END';
  embedding_types?: Array<'float' | 'int8' | 'uint8' | 'binary' | 'ubinary'>;
}

/** InvokeModel's answer from Cohere Embed: floats, or by type when embedding_types was given. */
export interface CohereEmbedResponse {
  id?: string;
  response_type?: 'embeddings_floats' | 'embeddings_by_type';
  embeddings?: number[][] | { float?: number[][] };
  texts?: string[];
}

/**
 * Google's Gemini API wire format (`models.generateContent` and `models.streamGenerateContent` of
 * generativelanguage.googleapis.com/v1beta), as far as this adapter writes and reads it; names are
 * the REST (proto3 JSON, lowerCamelCase) names of the published API reference: Content, Part,
 * Tool, ToolConfig, GenerationConfig, GenerateContentResponse, UsageMetadata, and the google.rpc
 * Status error envelope.
 */

/** One part of a Content. */
export interface GeminiPart {
  text?: string;
  /** True on a thought-summary part: the model's reasoning, not its answer. */
  thought?: boolean;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { id?: string; name: string; args?: Record<string, unknown> };
  functionResponse?: { id?: string; name: string; response: Record<string, unknown> };
}

/** A turn of the conversation: `user` or `model`. */
export interface GeminiContent {
  role?: 'user' | 'model';
  parts: GeminiPart[];
}

/** The OpenAPI-3.0 subset of JSON Schema Gemini accepts for function parameters and response schemas. */
export interface GeminiSchema {
  type?: 'STRING' | 'NUMBER' | 'INTEGER' | 'BOOLEAN' | 'ARRAY' | 'OBJECT' | 'NULL';
  format?: string;
  title?: string;
  description?: string;
  nullable?: boolean;
  enum?: string[];
  items?: GeminiSchema;
  minItems?: string | number;
  maxItems?: string | number;
  properties?: Record<string, GeminiSchema>;
  required?: string[];
  minProperties?: string | number;
  maxProperties?: string | number;
  minLength?: string | number;
  maxLength?: string | number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  anyOf?: GeminiSchema[];
  propertyOrdering?: string[];
  default?: unknown;
  example?: unknown;
}

/** A function the model may call. */
export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  parameters?: GeminiSchema;
}

/** The request body of generateContent / streamGenerateContent. */
export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
  tools?: Array<{ functionDeclarations: GeminiFunctionDeclaration[] }>;
  toolConfig?: { functionCallingConfig: { mode: 'AUTO' | 'ANY' | 'NONE'; allowedFunctionNames?: string[] } };
  generationConfig?: {
    temperature?: number;
    topP?: number;
    maxOutputTokens?: number;
    stopSequences?: string[];
    candidateCount?: number;
    presencePenalty?: number;
    frequencyPenalty?: number;
    seed?: number;
    responseMimeType?: string;
    responseSchema?: GeminiSchema;
  };
}

/** Token counts; promptTokenCount includes the cached part, candidatesTokenCount excludes thoughts. */
export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  toolUsePromptTokenCount?: number;
  thoughtsTokenCount?: number;
  totalTokenCount?: number;
}

/** One candidate answer. */
export interface GeminiCandidate {
  content?: { role?: string; parts?: GeminiPart[] };
  /** STOP, MAX_TOKENS, SAFETY, RECITATION, LANGUAGE, OTHER, BLOCKLIST, PROHIBITED_CONTENT, SPII, MALFORMED_FUNCTION_CALL, ... */
  finishReason?: string;
  index?: number;
}

/** A whole response, or one chunk of a stream (the same message). */
export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  /** Set when the prompt itself was blocked (then there are no candidates). */
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
  /** An error record, which some proxies and the stream itself may carry inside a 200. */
  error?: GeminiError;
}

/** The google.rpc.Status of the error envelope `{ "error": { code, message, status, details } }`. */
export interface GeminiError {
  code?: number;
  message?: string;
  /** RESOURCE_EXHAUSTED, UNAVAILABLE, INVALID_ARGUMENT, PERMISSION_DENIED, ... */
  status?: string;
  details?: Array<{ '@type'?: string; retryDelay?: string; reason?: string; [field: string]: unknown }>;
}

/** EmbedContentRequest (models.embedContent, and each of batchEmbedContents' requests). */
export interface GeminiEmbedContentRequest {
  /** `models/{model}`: required in a batch's requests, the same as the URL's model. */
  model?: string;
  content: { parts: { text: string }[] };
  /** A smaller vector length, for models that take one (gemini-embedding-001). */
  outputDimensionality?: number;
}

/** BatchEmbedContentsRequest: at most 100 requests, each naming the URL's model. */
export interface GeminiBatchEmbedContentsRequest {
  requests: GeminiEmbedContentRequest[];
}

/** ContentEmbedding. */
export interface GeminiContentEmbedding {
  values?: number[];
}

/** EmbedContentResponse. */
export interface GeminiEmbedContentResponse {
  embedding?: GeminiContentEmbedding;
}

/** BatchEmbedContentsResponse: one embedding per request, in order. */
export interface GeminiBatchEmbedContentsResponse {
  embeddings?: GeminiContentEmbedding[];
}

/**
 * What every wire adapter's parser gives the completion pipeline: the request as the contracts
 * carry it and the traits the router and the limiter need, whichever API it came on.
 */
import type { ChatRequest } from '@gateway/proto';

/** A validated request and the traits the router and the limiter need. */
export interface ParsedChatRequest {
  request: ChatRequest;
  stream: boolean;
  includeUsage: boolean;
  needsTools: boolean;
  needsVision: boolean;
  needsJsonMode: boolean;
  /** The caller's routing policy for `auto` (`route_policy` field), when set. */
  routePolicy?: string;
  /**
   * `fallbacks`: the model ids to try in order when the chosen one fails before its first byte,
   * `true` for the catalog's chain of the chosen model, `false` for none; absent: the key's default.
   */
  fallbacks?: string[] | boolean;
  /**
   * The caller used the deprecated `functions` / `function_call`: the request was translated to
   * tools, and the answer must come back as `message.function_call` and finish_reason
   * `function_call`, as such callers read it.
   */
  legacyFunctions?: boolean;
  /**
   * Set on an embeddings request (/v1/embeddings, parse-embeddings-request.ts): its inputs; its
   * `request` then carries the model alone. Only embedding models serve it.
   */
  embeddings?: EmbeddingInputs;
}

/** The inputs of an embeddings request, as the executor's EmbedRequest carries them. */
export interface EmbeddingInputs {
  /** The inputs as text; empty when they came as token ids. */
  texts: string[];
  /** The inputs as token ids; empty when they came as text. */
  tokenArrays: number[][];
  /** The vectors' length asked for; 0: the model's own. */
  dimensions: number;
  /** OpenAI's `user`; '' when absent. */
  user: string;
  /** How the vectors are written: JSON numbers, or base64 of little-endian float32. */
  encoding: 'float' | 'base64';
}

/**
 * Validates an OpenAI embeddings body (CreateEmbeddingRequest): `input` as a string, an array of
 * strings, an array of token ids, or an array of token-id arrays; `model`; `encoding_format`
 * (`float` or `base64`); `dimensions`; `user`. Each violation is a 400 in OpenAI's envelope whose
 * `param` names the field (`input[3]`, `input[1][7]`). The limits are OpenAI's: at most 2048
 * inputs, none empty.
 */
import { AUTO_MODEL_ID } from '@gateway/catalog';
import { describe, type EmbeddingInputs, type ParsedChatRequest, requiredBody, requiredModel } from './parse-chat-request.js';
import { invalid } from '../request-error.js';
import type { Json, JsonObject } from './translated-request.js';

/** The most inputs one request may carry (OpenAI's limit). */
export const MAX_EMBEDDING_INPUTS = 2048;

/** The largest token id accepted: the ids travel as uint32, and no tokenizer has more ids than this. */
const MAX_TOKEN_ID = 2 ** 31 - 1;

/** The body fields of CreateEmbeddingRequest; any other is refused, as OpenAI refuses it. */
const FIELDS = new Set(['input', 'model', 'encoding_format', 'dimensions', 'user']);

/** A validated embeddings request: the model alone in `request`, the inputs in `embeddings`. */
export interface ParsedEmbeddingRequest extends ParsedChatRequest {
  embeddings: EmbeddingInputs;
}

function typeError(param: string, expected: string, value: Json) {
  return invalid(param, `Invalid type for '${param}': expected ${expected}, but got ${describe(value)}.`, 'invalid_type');
}

/** A token id: an integer from 0 to MAX_TOKEN_ID. */
function tokenId(value: Json, param: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw typeError(param, 'an integer token id', value);
  if (value < 0 || value > MAX_TOKEN_ID)
    throw invalid(param, `Invalid value for '${param}': ${value} is not a token id; it must be an integer between 0 and ${MAX_TOKEN_ID}.`);
  return value;
}

/** `input[index]` (or `input` itself): a non-empty token-id array. */
function tokenArray(value: Json[], param: string): number[] {
  if (value.length === 0) throw invalid(param, `Invalid '${param}': empty array. Expected at least 1 token id.`, 'empty_array');
  return value.map((id, position) => tokenId(id, `${param}[${position}]`));
}

/** `input`, as texts or token arrays. */
function parseInput(input: Json): Pick<EmbeddingInputs, 'texts' | 'tokenArrays'> {
  if (input === undefined || input === null) throw invalid('input', "Missing required parameter: 'input'.", 'missing_required_parameter');
  if (typeof input === 'string') {
    if (input.length === 0) throw invalid('input', "Invalid 'input': empty string. Expected a non-empty string.", 'empty_string');
    return { texts: [input], tokenArrays: [] };
  }
  if (!Array.isArray(input)) throw typeError('input', 'a string, an array of strings, an array of token ids or an array of token-id arrays', input);
  if (input.length === 0) throw invalid('input', "Invalid 'input': empty array. Expected at least 1 input.", 'empty_array');
  const first = input[0];
  // An array of integers is one input given as tokens.
  if (typeof first === 'number') return { texts: [], tokenArrays: [tokenArray(input, 'input')] };
  if (input.length > MAX_EMBEDDING_INPUTS) {
    throw invalid('input', `Invalid 'input': ${input.length} inputs. Expected at most ${MAX_EMBEDDING_INPUTS} inputs per request.`, 'array_above_max_length');
  }
  if (typeof first === 'string') {
    const texts = input.map((item, index) => {
      const param = `input[${index}]`;
      if (typeof item !== 'string') throw typeError(param, 'a string (every input of the array as the first: text)', item);
      if (item.length === 0) throw invalid(param, `Invalid '${param}': empty string. Expected a non-empty string.`, 'empty_string');
      return item;
    });
    return { texts, tokenArrays: [] };
  }
  if (Array.isArray(first)) {
    const tokenArrays = input.map((item, index) => {
      const param = `input[${index}]`;
      if (!Array.isArray(item)) throw typeError(param, 'an array of token ids (every input of the array as the first: tokens)', item);
      return tokenArray(item, param);
    });
    return { texts: [], tokenArrays };
  }
  throw typeError('input[0]', 'a string, a token id or an array of token ids', first);
}

/** `encoding_format`: `float` (the default) or `base64`. */
function parseEncoding(value: Json): EmbeddingInputs['encoding'] {
  if (value === undefined || value === null) return 'float';
  if (value === 'float' || value === 'base64') return value;
  if (typeof value !== 'string') throw typeError('encoding_format', "one of 'float', 'base64'", value);
  throw invalid('encoding_format', `Invalid value for 'encoding_format': '${value.slice(0, 64)}'. Supported values are: 'float', 'base64'.`);
}

/** `dimensions`: a positive integer (the model's limit is checked once it is known); 0 when absent. */
function parseDimensions(value: Json): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value)) throw typeError('dimensions', 'a positive integer', value);
  if (value < 1 || value > 65_536) throw invalid('dimensions', `Invalid value for 'dimensions': ${value}; it must be an integer between 1 and 65536.`);
  return value;
}

/** Validates an embeddings body; throws a RequestError (400) naming the offending field. */
export function parseEmbeddingsRequest(original: Json): ParsedEmbeddingRequest {
  const body: JsonObject = requiredBody(original);
  for (const name of Object.keys(body)) {
    if (!FIELDS.has(name)) throw invalid(name, `Unrecognized request argument supplied: ${name.slice(0, 64)}`, 'unknown_parameter');
  }
  const model = requiredModel(body);
  if (model === AUTO_MODEL_ID) {
    throw invalid('model', "Invalid value for 'model': `auto` chooses among chat models; name an embedding model (GET /v1/models lists them).");
  }
  const user = body.user;
  if (user !== undefined && user !== null && typeof user !== 'string') throw typeError('user', 'a string', user);
  const inputs = parseInput(body.input);
  return {
    request: { model, messages: [] },
    stream: false,
    includeUsage: false,
    needsTools: false,
    needsVision: false,
    needsJsonMode: false,
    // Another model's vectors live in another space: an embedding never falls back.
    fallbacks: false,
    embeddings: {
      ...inputs,
      dimensions: parseDimensions(body.dimensions),
      user: typeof user === 'string' ? user : '',
      encoding: parseEncoding(body.encoding_format),
    },
  };
}

/**
 * Token counting with a real tokenizer (o200k_base, the encoding of OpenAI's current models).
 * Prompt counts follow OpenAI's published accounting for chat messages: a fixed overhead per
 * message and for the reply's priming, plus the tokens of each text.
 *
 * Cost: linear in the length of the text, whatever the text (see text-segments.ts: a long run of
 * one letter, emoji or space used to cost quadratic time in gpt-tokenizer). Counts are exact,
 * equal to gpt-tokenizer's, for any text without such a run (LONG_RUN_CHARACTERS of letters, of
 * symbols or of spaces) and with a token boundary every 2 KB or so (any space, line break, or
 * letter or number followed by something else will do); otherwise they may differ by about a
 * token per cut, one per LONG_RUN_CHARACTERS characters of a run.
 *
 * Every function has an `...Async` twin that returns the same result but gives the event loop a
 * turn every few milliseconds (see time-slices.ts): a service that counts a caller's text while it
 * serves other requests calls those. A text under SMALL_INPUT_BYTES of UTF-8 never pauses.
 *
 * The texts of special tokens (`<|endoftext|>`) are counted as plain text, as OpenAI's API reads
 * them in a message; gpt-tokenizer's default would throw on them.
 */
import { countTokens, encode, setMergeCacheSize } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatRequest, Message } from '@gateway/proto';
import { textSegments } from './text-segments.js';
import { runInTimeSlices, runToEnd, type Steps } from './time-slices.js';
import { forEachTokenPiece } from './token-pieces.js';

export { LONG_RUN_CHARACTERS, SEGMENT_BYTES } from './text-segments.js';
export { SLICE_MILLISECONDS, SMALL_INPUT_BYTES } from './time-slices.js';

/** Tokens added per message for its framing. */
const TOKENS_PER_MESSAGE = 3;
/** Tokens that prime the assistant's reply. */
const REPLY_PRIMING_TOKENS = 3;
/** A low-detail image, as OpenAI bills it; a fair estimate where detail is unknown. */
const IMAGE_TOKENS = 85;

/** Special tokens' texts are plain text (see the file header). */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Entries of gpt-tokenizer's cache of byte-pair merges (its default is 100,000). Once its cache is
 * full, each miss evicts the oldest entry through a Map iterator that walks past every entry
 * deleted before it, so text of distinct pieces (random symbols, CJK) got up to ten times slower
 * the longer a process ran: 256K characters of random code points took 0.25 s on a fresh cache
 * and 2.5 s once it was full. At 3,000 entries a full cache costs 1.4 times a fresh one, and
 * counting 1.5 MB of this repository's code and docs is as fast as with 100,000 (0.20 s).
 */
const MERGE_CACHE_ENTRIES = 3_000;
setMergeCacheSize(MERGE_CACHE_ENTRIES);

/** The fields of a request that its prompt tokens depend on. */
export type PromptRequest = Pick<ChatRequest, 'messages' | 'tools'>;

/** Counts a text's tokens a segment a step; false as soon as they exceed `limit`. */
function* countTextSteps(text: string, limit: number): Steps<number | false> {
  let tokens = 0;
  for (const segment of textSegments(text)) {
    tokens += countTokens(segment.text, PLAIN_TEXT);
    if (tokens > limit) return false;
    yield segment.bytes;
  }
  return tokens;
}

/** Tokens of a text. */
export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : (runToEnd(countTextSteps(text, Number.POSITIVE_INFINITY)) as number);
}

/** countTextTokens, pausing for the event loop on a big text. */
export async function countTextTokensAsync(text: string): Promise<number> {
  return text.length === 0 ? 0 : ((await runInTimeSlices(countTextSteps(text, Number.POSITIVE_INFINITY))) as number);
}

/**
 * Every text of a message the upstream reads: its text, text parts, refusal, thinking (an earlier
 * turn's thinking blocks go back to an Anthropic upstream) and tool-call arguments.
 */
export function messageText(message: Message): string {
  const pieces: string[] = [];
  if (typeof message.text === 'string') pieces.push(message.text);
  for (const part of message.parts?.parts ?? []) {
    if (typeof part.text === 'string') pieces.push(part.text);
    if (typeof part.refusal === 'string') pieces.push(part.refusal);
    if (typeof part.thinking?.thinking === 'string') pieces.push(part.thinking.thinking);
  }
  if (message.refusal) pieces.push(message.refusal);
  for (const call of message.tool_calls ?? []) pieces.push(call.function?.name ?? '', call.function?.arguments ?? '');
  return pieces.join('\n');
}

/** The text a tool's definition is counted as. */
function toolText(definition: { name?: string; description?: string; parameters_json?: string }): string {
  return `${definition.name ?? ''}\n${definition.description ?? ''}\n${definition.parameters_json ?? ''}`;
}

/** Counts a request's prompt tokens a step at a time; undefined as soon as they exceed `limit`. */
function* countPromptSteps(request: PromptRequest, limit: number): Steps<number | undefined> {
  let tokens = REPLY_PRIMING_TOKENS;
  function* add(fixed: number, text: string): Steps<boolean> {
    tokens += fixed;
    if (text.length > 0) {
      const counted = yield* countTextSteps(text, limit - tokens);
      if (counted === false) return false;
      tokens += counted;
    }
    return tokens <= limit;
  }
  for (const message of request.messages ?? []) {
    let fixed = TOKENS_PER_MESSAGE + 1;
    if (message.name) fixed += 1 + ((yield* countTextSteps(message.name, Number.POSITIVE_INFINITY)) as number);
    for (const part of message.parts?.parts ?? []) if (part.image_url) fixed += IMAGE_TOKENS;
    if (!(yield* add(fixed, messageText(message)))) return undefined;
  }
  for (const tool of request.tools ?? []) {
    if (!tool.function) continue;
    if (!(yield* add(TOKENS_PER_MESSAGE, toolText(tool.function)))) return undefined;
  }
  return tokens;
}

/** What a prompt's tokens can be known to be without tokenizing it: see promptTokenBounds. */
export interface PromptTokenBounds {
  /**
   * A guess at the count, from the texts' UTF-8 size (a token of o200k is about 4 bytes of
   * English or code, 3 of CJK): what a reservation is made with before the provider reports the
   * real usage, as OpenAI's own limiter estimates from characters.
   */
  readonly estimate: number;
  /**
   * A bound the count never exceeds: every token is at least one byte of UTF-8, so the texts'
   * bytes plus the fixed framing. A prompt whose bound fits a context window fits it.
   */
  readonly upper: number;
}

/** Bytes of UTF-8 a token of o200k averages over prose and code; the estimate's divisor. */
const ESTIMATE_BYTES_PER_TOKEN = 4;

/**
 * Bounds of a request's prompt tokens as countPromptTokens counts them, at the cost of measuring
 * the texts' UTF-8 length (no tokenizer): the gateway counts exactly only where a number reaches
 * a caller (a context window that might be exceeded, a stream cut short) and estimates elsewhere.
 */
export function promptTokenBounds(request: PromptRequest): PromptTokenBounds {
  let fixed = REPLY_PRIMING_TOKENS;
  let bytes = 0;
  for (const message of request.messages ?? []) {
    fixed += TOKENS_PER_MESSAGE + 1;
    if (message.name) {
      fixed += 1;
      bytes += Buffer.byteLength(message.name);
    }
    if (typeof message.text === 'string') bytes += Buffer.byteLength(message.text);
    for (const part of message.parts?.parts ?? []) {
      if (part.image_url) fixed += IMAGE_TOKENS;
      if (typeof part.text === 'string') bytes += Buffer.byteLength(part.text) + 1;
      if (typeof part.refusal === 'string') bytes += Buffer.byteLength(part.refusal) + 1;
      if (typeof part.thinking?.thinking === 'string') bytes += Buffer.byteLength(part.thinking.thinking) + 1;
    }
    if (message.refusal) bytes += Buffer.byteLength(message.refusal) + 1;
    for (const call of message.tool_calls ?? []) bytes += Buffer.byteLength(call.function?.name ?? '') + Buffer.byteLength(call.function?.arguments ?? '') + 2;
  }
  for (const tool of request.tools ?? []) {
    if (!tool.function) continue;
    fixed += TOKENS_PER_MESSAGE;
    bytes += Buffer.byteLength(toolText(tool.function));
  }
  return { estimate: fixed + Math.ceil(bytes / ESTIMATE_BYTES_PER_TOKEN), upper: fixed + bytes };
}

/** Prompt tokens of a request: its messages and the definitions of the tools it offers. */
export function countPromptTokens(request: PromptRequest): number {
  return runToEnd(countPromptSteps(request, Number.POSITIVE_INFINITY))!;
}

/** countPromptTokens, pausing for the event loop on a big request. */
export async function countPromptTokensAsync(request: PromptRequest): Promise<number> {
  return (await runInTimeSlices(countPromptSteps(request, Number.POSITIVE_INFINITY)))!;
}

/**
 * Prompt tokens of a request as countPromptTokens counts them, or undefined as soon as they exceed
 * `limit`: counting stops within a segment (SEGMENT_BYTES) of that point, so a huge prompt
 * costs no more than the largest context window it could fit in.
 */
export function countPromptTokensWithin(request: PromptRequest, limit: number): number | undefined {
  return runToEnd(countPromptSteps(request, limit));
}

/**
 * The UTF-8 bytes of the segments that countPromptTokensWithin(request, limit) has counted when it
 * answers: its work, counted rather than timed, so that a test can check it stops early or reads
 * each byte once on a noisy machine.
 */
export function bytesCountedWithin(request: PromptRequest, limit: number): number {
  const steps = countPromptSteps(request, limit);
  let bytes = 0;
  for (let step = steps.next(); !step.done; step = steps.next()) bytes += step.value;
  return bytes;
}

/**
 * countPromptTokensWithin, pausing for the event loop on a big request: at most about
 * SLICE_MILLISECONDS of work between two turns, none for a request whose texts total under
 * SMALL_INPUT_BYTES. The same result as countPromptTokensWithin.
 */
export function countPromptTokensWithinAsync(request: PromptRequest, limit: number): Promise<number | undefined> {
  return runInTimeSlices(countPromptSteps(request, limit));
}

/** The first tokens of a text, as pieces of text. */
export interface TokenPrefix {
  /**
   * The tokens' texts in order: one piece per token, except that tokens that split a character
   * share one piece. Joined, they are the text when `complete`, else a prefix of it.
   */
  readonly pieces: string[];
  /** How many tokens the pieces hold. */
  readonly tokens: number;
  /** False when the budget stopped the pieces before the end of the text. */
  readonly complete: boolean;
}

/** Cuts a text into token pieces a segment a step, stopping before the piece that would exceed `maxTokens`. */
function* tokenPrefixSteps(text: string, maxTokens: number): Steps<TokenPrefix> {
  const pieces: string[] = [];
  let tokens = 0;
  let complete = true;
  const keep = (piece: string, pieceTokens: number): boolean => {
    if (tokens + pieceTokens > maxTokens) return (complete = false);
    pieces.push(piece);
    tokens += pieceTokens;
    return true;
  };
  for (const segment of textSegments(text)) {
    if (!forEachTokenPiece(segment.text, encode(segment.text, PLAIN_TEXT), keep)) break;
    yield segment.bytes;
  }
  return { pieces, tokens, complete };
}

/**
 * The pieces of a text's first tokens, up to `maxTokens` (the whole text by default). Tokenizes
 * no further than a segment past the budget, so a reply cut to a few tokens costs that much.
 */
export function tokenPrefix(text: string, maxTokens = Number.POSITIVE_INFINITY): TokenPrefix {
  return runToEnd(tokenPrefixSteps(text, maxTokens));
}

/** tokenPrefix, pausing for the event loop on a big text. */
export function tokenPrefixAsync(text: string, maxTokens = Number.POSITIVE_INFINITY): Promise<TokenPrefix> {
  return runInTimeSlices(tokenPrefixSteps(text, maxTokens));
}

/**
 * Splits a text into its tokens' texts, in order; joined, they give back the text. Tokens that
 * split a character (part of an emoji's bytes) share one piece, so every piece is valid text.
 */
export function tokenPieces(text: string): string[] {
  return tokenPrefix(text).pieces;
}

/** tokenPieces, pausing for the event loop on a big text. */
export async function tokenPiecesAsync(text: string): Promise<string[]> {
  return (await tokenPrefixAsync(text)).pieces;
}

/**
 * Runs the tokenizer once over text of every kind it treats apart (letters, CJK, emoji, symbols,
 * spaces, digits, random code points), so that a service's first requests do not pay for compiling
 * its paths: without it, the first megabyte of emoji or random code points a process counts holds
 * its event loop 20-30 ms in one go; after it, no slice is longer than about 10 ms. About 0.1 s;
 * call it once at start, before listening.
 */
export function warmUpTokenizer(): void {
  let state = 1;
  const random = () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state / 0x7fffffff;
  };
  const randomUnits = String.fromCharCode(...Array.from({ length: 8_192 }, () => Math.floor(random() * 0x10000)));
  const sample = [
    'The quick brown fox, 1234567 jumps.',
    '\u4E2D\u6587\u5B57'.repeat(300),
    '\u{1F600}'.repeat(300),
    'A'.repeat(600),
    '!'.repeat(600),
    ' '.repeat(600),
    '9'.repeat(600),
    randomUnits,
  ];
  for (const text of sample) countTextTokens(text);
}

export * from './routing-text.js';

/**
 * Token counting with a real tokenizer (o200k_base, the encoding of OpenAI's current models).
 * Prompt counts follow OpenAI's published accounting for chat messages: a fixed overhead per
 * message and for the reply's priming, plus the tokens of each text.
 */
import { countTokens, encode, decode, isWithinTokenLimit } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatRequest, Message } from '@gateway/proto';

/** Tokens added per message for its framing. */
const TOKENS_PER_MESSAGE = 3;
/** Tokens that prime the assistant's reply. */
const REPLY_PRIMING_TOKENS = 3;
/** A low-detail image, as OpenAI bills it; a fair estimate where detail is unknown. */
const IMAGE_TOKENS = 85;

/** Tokens of a text. */
export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text);
}

/** Splits a text into its tokens' texts, in order; joined, they give back the text. */
export function tokenPieces(text: string): string[] {
  return encode(text).map((token) => decode([token]));
}

/** Every user-visible text of a message: its text, text parts, refusal and tool-call arguments. */
export function messageText(message: Message): string {
  const pieces: string[] = [];
  if (typeof message.text === 'string') pieces.push(message.text);
  for (const part of message.parts?.parts ?? []) {
    if (typeof part.text === 'string') pieces.push(part.text);
    if (typeof part.refusal === 'string') pieces.push(part.refusal);
  }
  if (message.refusal) pieces.push(message.refusal);
  for (const call of message.tool_calls ?? []) pieces.push(call.function?.name ?? '', call.function?.arguments ?? '');
  return pieces.join('\n');
}

/** Prompt tokens of a request: its messages and the definitions of the tools it offers. */
export function countPromptTokens(request: Pick<ChatRequest, 'messages' | 'tools'>): number {
  return countPromptTokensWithin(request, Number.POSITIVE_INFINITY)!;
}

/**
 * Prompt tokens of a request as countPromptTokens counts them, or undefined as soon as they exceed
 * `limit`: the tokenizer stops there, so a huge prompt costs no more than the largest context
 * window it could fit in (a 4 MB text over a 200k limit: a fifth of the work of counting it all).
 */
export function countPromptTokensWithin(request: Pick<ChatRequest, 'messages' | 'tools'>, limit: number): number | undefined {
  let tokens = REPLY_PRIMING_TOKENS;
  const add = (fixed: number, text: string): boolean => {
    tokens += fixed;
    if (text.length > 0) {
      const remaining = limit - tokens;
      const counted = Number.isFinite(remaining) ? (remaining < 0 ? false : isWithinTokenLimit(text, remaining)) : countTokens(text);
      if (counted === false) return false;
      tokens += counted;
    }
    return tokens <= limit;
  };
  for (const message of request.messages ?? []) {
    let fixed = TOKENS_PER_MESSAGE + 1;
    if (message.name) fixed += 1 + countTextTokens(message.name);
    for (const part of message.parts?.parts ?? []) if (part.image_url) fixed += IMAGE_TOKENS;
    if (!add(fixed, messageText(message))) return undefined;
  }
  for (const tool of request.tools ?? []) {
    const fn = tool.function;
    if (!fn) continue;
    if (!add(TOKENS_PER_MESSAGE, `${fn.name ?? ''}\n${fn.description ?? ''}\n${fn.parameters_json ?? ''}`)) return undefined;
  }
  return tokens;
}

export * from './routing-text.js';

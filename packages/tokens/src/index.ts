/**
 * Token counting with a real tokenizer (o200k_base, the encoding of OpenAI's current models).
 * Prompt counts follow OpenAI's published accounting for chat messages: a fixed overhead per
 * message and for the reply's priming, plus the tokens of each text.
 */
import { countTokens, encode, decode } from 'gpt-tokenizer/encoding/o200k_base';
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

/** Tokens of one message, framing included. */
export function countMessageTokens(message: Message): number {
  let tokens = TOKENS_PER_MESSAGE + 1 + countTextTokens(messageText(message));
  if (message.name) tokens += 1 + countTextTokens(message.name);
  for (const part of message.parts?.parts ?? []) if (part.image_url) tokens += IMAGE_TOKENS;
  return tokens;
}

/** Prompt tokens of a request: its messages and the definitions of the tools it offers. */
export function countPromptTokens(request: Pick<ChatRequest, 'messages' | 'tools'>): number {
  let tokens = REPLY_PRIMING_TOKENS;
  for (const message of request.messages ?? []) tokens += countMessageTokens(message);
  for (const tool of request.tools ?? []) {
    const fn = tool.function;
    if (!fn) continue;
    tokens += TOKENS_PER_MESSAGE + countTextTokens(`${fn.name ?? ''}\n${fn.description ?? ''}\n${fn.parameters_json ?? ''}`);
  }
  return tokens;
}

export * from './routing-text.js';

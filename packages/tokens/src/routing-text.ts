/**
 * The text the `auto` router scores for a conversation: the task being asked now, not everything
 * around it. The edge builds RouteRequest.prompt_text with this function and the router's `score`
 * command and trainer read OpenAI messages through it, so that all three score the same text.
 */
import type { Message } from '@gateway/proto';

/** At most this many characters are sent, the end of the text kept: the scorer reads the start of what it gets. */
export const MAX_ROUTING_TEXT_CHARACTERS = 16_384;

/**
 * A last user message shorter than this many words is a follow-up ("why?", "now in Python"):
 * the user messages before it are read too, until the text has this many words.
 */
export const FOLLOW_UP_WORDS = 12;

/** How many user messages are read at most, the last one included. */
const MAX_USER_MESSAGES = 4;

/** A message's text and text parts, joined with newlines. */
function ownText(message: Pick<Message, 'text' | 'parts'>): string {
  const pieces: string[] = [];
  if (typeof message.text === 'string' && message.text !== '') pieces.push(message.text);
  for (const part of message.parts?.parts ?? []) if (typeof part.text === 'string' && part.text !== '') pieces.push(part.text);
  return pieces.join('\n');
}

const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;

/**
 * The routing text of a conversation: its last user message, with the user messages before it
 * while the text is shorter than FOLLOW_UP_WORDS (at most four messages), joined with newlines;
 * the last MAX_ROUTING_TEXT_CHARACTERS characters. System and developer messages are read only
 * when there is no user message: they mostly set a persona, rules or context that every request
 * of an application repeats, and a long one would otherwise make "hi" look like hard work. Tool
 * results and assistant turns are not read either; the request's needs (tools, vision, context
 * length) are routed on separately.
 */
export function routingText(messages: ReadonlyArray<Pick<Message, 'role' | 'text' | 'parts'>>): string {
  const users = messages
    .filter((message) => message.role === 'ROLE_USER')
    .map(ownText)
    .filter((text) => text !== '');
  let text: string;
  if (users.length === 0) {
    text = messages
      .filter((message) => message.role === 'ROLE_SYSTEM' || message.role === 'ROLE_DEVELOPER')
      .map(ownText)
      .filter((part) => part !== '')
      .join('\n');
  } else {
    const read = [users.at(-1)!];
    let words = wordCount(read[0]!);
    for (let index = users.length - 2; index >= 0 && words < FOLLOW_UP_WORDS && read.length < MAX_USER_MESSAGES; index -= 1) {
      read.unshift(users[index]!);
      words += wordCount(users[index]!);
    }
    text = read.join('\n');
  }
  return text.length > MAX_ROUTING_TEXT_CHARACTERS ? text.slice(-MAX_ROUTING_TEXT_CHARACTERS) : text;
}

/**
 * The question a semantic lookup compares: the text of the request's last message when it is the
 * user's and holds text only (a string, or text parts), and the request without that text (its
 * context), which a kept entry's must match exactly. A request whose last message is another
 * role's (a tool result in an agent's loop) or carries an image, audio or a file has no such
 * question, nor has one whose question is empty or longer than MAX_QUESTION_CHARS: it is looked
 * up exactly only.
 */
import type { ChatRequest, Message } from '@gateway/proto';

/** The longest question embedded (characters): a longer last turn is looked up exactly only. */
export const MAX_QUESTION_CHARS = 8_000;

/** A request's question and its context. */
export interface SemanticQuestion {
  /** The last user turn's text, its text parts joined by a newline. */
  text: string;
  /** The request with that turn's text left out: what must match exactly. */
  context: ChatRequest;
}

/** The text of a message of text only; undefined when it holds anything else. */
function textOnly(message: Message): string | undefined {
  if (typeof message.text === 'string') return message.text;
  const parts = message.parts?.parts;
  if (!parts || parts.length === 0) return undefined;
  const texts: string[] = [];
  for (const part of parts) {
    if (typeof part.text !== 'string') return undefined;
    texts.push(part.text);
  }
  return texts.join('\n');
}

/** The request's question and context; undefined when it has none (see the module comment). */
export function semanticQuestion(request: ChatRequest): SemanticQuestion | undefined {
  const messages = request.messages ?? [];
  const last = messages.at(-1);
  if (last?.role !== 'ROLE_USER') return undefined;
  const text = textOnly(last);
  if (text === undefined || text.trim() === '' || text.length > MAX_QUESTION_CHARS) return undefined;
  // The turn keeps everything but its text (its name, a cache breakpoint): those must match too.
  const { text: _text, parts: _parts, content: _content, ...rest } = last as Message & { content?: unknown };
  return { text, context: { ...request, messages: [...messages.slice(0, -1), rest] } };
}

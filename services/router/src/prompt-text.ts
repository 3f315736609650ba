/**
 * The text the `auto` scorer reads from OpenAI chat messages, built the way the edge builds
 * RouteRequest.prompt_text: the texts of the user, system and developer messages (string content
 * or text parts), joined with newlines, keeping the last 16,384 characters. The `score` command
 * and the trainer use this function, so that they score exactly what Route scores.
 */
export function promptText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  const texts: string[] = [];
  for (const message of messages as Array<{ role?: unknown; content?: unknown }>) {
    if (message === null || typeof message !== 'object') continue;
    if (message.role !== 'user' && message.role !== 'system' && message.role !== 'developer') continue;
    if (typeof message.content === 'string') texts.push(message.content);
    else if (Array.isArray(message.content)) {
      for (const part of message.content as Array<{ type?: unknown; text?: unknown }>) {
        if (part !== null && typeof part === 'object' && typeof part.text === 'string') texts.push(part.text);
      }
    }
  }
  const text = texts.join('\n');
  return text.length > MAX_PROMPT_CHARACTERS ? text.slice(-MAX_PROMPT_CHARACTERS) : text;
}

/** The edge sends at most this many characters, the end of the conversation. */
export const MAX_PROMPT_CHARACTERS = 16_384;

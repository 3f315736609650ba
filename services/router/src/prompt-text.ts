/**
 * The text the `auto` scorer reads from OpenAI chat messages: `routingText` (the package
 * @gateway/tokens), the very function the edge builds RouteRequest.prompt_text with, applied to
 * the messages as JSON. The `score` command and the trainer read prompts through this function, so
 * that they score exactly what Route scores.
 */
import type { Message } from '@gateway/proto';
import { routingText } from '@gateway/tokens';

const ROLES: Record<string, Message['role']> = {
  user: 'ROLE_USER',
  system: 'ROLE_SYSTEM',
  developer: 'ROLE_DEVELOPER',
  assistant: 'ROLE_ASSISTANT',
  tool: 'ROLE_TOOL',
};

/** One OpenAI message as the text-bearing part of a gateway Message; anything unreadable is skipped. */
function toMessage(message: unknown): Pick<Message, 'role' | 'text' | 'parts'> | undefined {
  if (message === null || typeof message !== 'object') return undefined;
  const { role, content } = message as { role?: unknown; content?: unknown };
  const mapped = typeof role === 'string' ? ROLES[role] : undefined;
  if (!mapped) return undefined;
  if (typeof content === 'string') return { role: mapped, text: content };
  if (!Array.isArray(content)) return { role: mapped };
  const parts = (content as Array<{ text?: unknown }>)
    .filter((part) => part !== null && typeof part === 'object' && typeof part.text === 'string')
    .map((part) => ({ text: part.text as string }));
  return { role: mapped, parts: { parts } };
}

/** The routing text of OpenAI chat messages (anything that is not an array reads as no text). */
export function promptText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  return routingText(messages.map(toMessage).filter((message) => message !== undefined));
}

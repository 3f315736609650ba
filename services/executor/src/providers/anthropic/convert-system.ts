/**
 * The top-level `system` of a Messages API body: the gateway's system and developer messages,
 * wherever they are (the Messages API has no system role inside `messages`), as one text joined
 * by blank lines, or as text blocks when breakpoints are set: one per message, or one per text part
 * of a message whose parts carry breakpoints, so a breakpoint caches the prompt up to its own part.
 */
import type { ChatRequestOutput, MessageOutput } from '@gateway/proto';
import { cacheControlOf, withCacheControl } from './cache-control.js';
import type { AnthropicCacheControl, AnthropicTextBlock } from './wire-types.js';

/** The text of a system or developer message. */
function systemText(message: MessageOutput): string {
  if (message.content === 'parts' || message.parts)
    return (message.parts?.parts ?? []).flatMap((part) => (part.text === undefined ? [] : [part.text])).join('\n');
  return message.text ?? '';
}

/** A system or developer message's cache breakpoint: its own, else the last one of its parts. */
function systemCacheControl(message: MessageOutput, position: number): AnthropicCacheControl | undefined {
  const parts = message.parts?.parts ?? [];
  const index = parts.findLastIndex((part) => part.cache_control);
  const own = cacheControlOf(message.cache_control, `messages[${position}].cache_control`);
  return own ?? (index < 0 ? undefined : cacheControlOf(parts[index]!.cache_control, `messages[${position}].content[${index}].cache_control`));
}

/**
 * A system or developer message's system blocks: one text block, or, when breakpoints sit on its
 * parts, one per text part, each with its own (the message's own breakpoint on the last), so a
 * breakpoint caches the prompt up to its own part and no further.
 */
function systemBlocks(message: MessageOutput, position: number): AnthropicTextBlock[] {
  const parts = message.parts?.parts ?? [];
  if (!parts.some((part) => part.cache_control)) {
    const text = systemText(message);
    return text === '' ? [] : [withCacheControl<AnthropicTextBlock>({ type: 'text', text }, systemCacheControl(message, position))];
  }
  const blocks = parts.flatMap((part, index) => {
    if (part.text === undefined || part.text === '') return [];
    const control = cacheControlOf(part.cache_control, `messages[${position}].content[${index}].cache_control`);
    return [withCacheControl<AnthropicTextBlock>({ type: 'text', text: part.text }, control)];
  });
  const own = cacheControlOf(message.cache_control, `messages[${position}].cache_control`);
  return own && blocks.length > 0 ? [...blocks.slice(0, -1), withCacheControl(blocks.at(-1)!, own)] : blocks;
}

/**
 * The top-level `system`: the system and developer messages' texts, joined by a blank line, or,
 * when one of them carries a cache breakpoint, their text blocks (one per message, or one per part
 * of a message whose parts carry breakpoints) with their breakpoints.
 */
export function systemOf(request: ChatRequestOutput): { text: string; blocks?: AnthropicTextBlock[] } {
  const blocks = (request.messages ?? []).flatMap((message, position) =>
    message.role === 'ROLE_SYSTEM' || message.role === 'ROLE_DEVELOPER' ? systemBlocks(message, position) : [],
  );
  const text = blocks.map((block) => block.text).join('\n\n');
  return blocks.some((block) => block.cache_control) ? { text, blocks } : { text };
}

/**
 * OpenAI clients expect completion ids shaped `chatcmpl-...` (CLIENT_COMPATIBILITY.md). Adapters
 * of providers with their own id format (Anthropic's `msg_...`, Gemini's responseId) keep the
 * upstream id inside it, so a log line can still be matched with the provider's records.
 */
import { randomUUID } from 'node:crypto';

/** `chatcmpl-<upstream id>`, or `chatcmpl-<random>` when the upstream sent none. */
export function completionId(upstreamId: string | undefined | null): string {
  return `chatcmpl-${upstreamId ? upstreamId : randomUUID().replace(/-/g, '')}`;
}

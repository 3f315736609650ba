/**
 * Compaction of a Responses conversation, as Codex asks for it:
 * - a request whose input holds a `{"type": "compaction_trigger"}` item (Codex's remote compaction
 *   "v2", on POST /v1/responses or its WebSocket) is answered by the served model, through the
 *   completion pipeline like any request, asked to summarize the conversation; its answer is
 *   exactly one output item, `{"type": "compaction", "id": "cmp_...", "encrypted_content": ...}`;
 * - POST /v1/responses/compact (the older contract) answers the same summary as the `compaction`
 *   item closing the retained user messages (routes/api/responses-compact.ts);
 * - a `compaction` item in a later request's input is expanded, for whichever upstream serves it,
 *   into the user message that carries the summary.
 * `encrypted_content` is opaque to clients but not secret: it is the summary the caller's own
 * conversation produced, versioned (`gwc1.` then base64url JSON) so that a later format can be told
 * apart. An item this gateway did not make (OpenAI's encrypted blobs) cannot be expanded: 400.
 */
import { randomUUID } from 'node:crypto';

type JsonObject = Record<string, unknown>;

/** The prefix of the `encrypted_content` this gateway writes. */
const CONTENT_PREFIX = 'gwc1.';

/** What the model is asked, in place of the `compaction_trigger` item. */
export const COMPACTION_PROMPT = [
  'Your context window is about to be compacted: the conversation above will be replaced by the summary you write now.',
  'Write a handoff summary for yourself, so that you can continue the work without the conversation: the user request and its',
  'constraints, what has been done so far (files changed, commands run and their results), decisions made, what remains to be',
  'done next, and any identifiers, paths or values you will need. Do not call any tool; answer with the summary only.',
].join(' ');

/** The text before a summary when a `compaction` item is expanded into the conversation. */
export const COMPACTED_HISTORY_PREFIX = 'The earlier part of this conversation was compacted. Its summary:\n\n';

/** The `compaction` output item of a summary. */
export function compactionItem(summary: string): JsonObject {
  const content = CONTENT_PREFIX + Buffer.from(JSON.stringify({ summary }), 'utf8').toString('base64url');
  return { id: `cmp_${randomUUID().replaceAll('-', '')}`, type: 'compaction', encrypted_content: content };
}

/** The summary a `compaction` item of this gateway carries, or undefined when it is not one. */
export function compactedSummary(item: JsonObject): string | undefined {
  const content = item.encrypted_content;
  if (typeof content !== 'string' || !content.startsWith(CONTENT_PREFIX)) return undefined;
  try {
    const decoded: unknown = JSON.parse(Buffer.from(content.slice(CONTENT_PREFIX.length), 'base64url').toString('utf8'));
    const summary = typeof decoded === 'object' && decoded !== null ? (decoded as { summary?: unknown }).summary : undefined;
    return typeof summary === 'string' ? summary : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The request log's bodies of a completion (only for a key or team with `log_bodies` on, which
 * auth's decision says): the request body as received and the answer (the whole JSON body, or for
 * a stream the text and tool call arguments it streamed), each redacted and capped
 * (body-redaction.ts), published once the answer is out: on a later turn of the event loop, so
 * that neither the stringifying nor the redaction ever delays an answer, and never failing one.
 */
import type { EdgeDependencies } from '../dependencies.js';
import { keptBody } from './body-redaction.js';
import type { Completion } from './completion.js';

/** The answer a stream's bodies keep: what it streamed, as JSON. */
export function streamedAnswer(completion: Completion): string {
  return JSON.stringify({ object: 'stream', text: completion.streamedText ?? '' });
}

/**
 * Publishes a completion's bodies when its key's decision asks for them; `answer` is read then
 * (empty for a request that failed before any answer).
 */
export function keepBodies(deps: Pick<EdgeDependencies, 'bodies' | 'config'>, completion: Completion, answer: () => string): void {
  const bodies = deps.bodies;
  // No decision: refused before auth decided (no key to keep bodies for).
  if (!bodies || completion.decision?.log_bodies !== true) return;
  setImmediate(() => {
    try {
      const maxBytes = deps.config.REQUEST_LOG_BODY_MAX_BYTES;
      const request = keptBody(JSON.stringify(completion.request.body ?? null), maxBytes);
      const response = keptBody(answer(), maxBytes);
      bodies.publish({
        event_id: completion.eventId,
        received_at_ms: completion.receivedAtMs,
        key_id: completion.decision.key_id ?? '',
        request: request.text,
        response: response.text,
        request_truncated_bytes: request.truncatedBytes,
        response_truncated_bytes: response.truncatedBytes,
      });
    } catch (error) {
      completion.request.log.warn({ err: { message: (error as Error).message } }, 'request bodies not kept');
    }
  });
}

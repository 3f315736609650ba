/**
 * Reads an upstream's server-sent events (eventsource-parser) one at a time, only as fast as the
 * caller pulls: backpressure reaches the upstream's TCP window. Shared by the anthropic and gemini
 * adapters.
 */
import type { Dispatcher } from 'undici';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { UpstreamError } from './upstream-error.js';
import { upstreamErrorFromTransport } from './upstream-http.js';

/** After the last event, how long the upstream has to end the response before the connection is dropped. */
const END_AFTER_LAST_EVENT_MS = 1000;

/** How to read one stream. */
export interface ServerSentEventsOptions {
  readonly provider: string;
  readonly signal: AbortSignal;
  /**
   * Whether an event is the stream's last (Anthropic's `message_stop`). After it nothing more is
   * yielded; the rest of the response is awaited (so the connection goes back to the pool) for up
   * to a second, then dropped. Without it, the stream ends with the response.
   */
  readonly isLast?: (event: EventSourceMessage) => boolean;
}

/**
 * Yields every event of a 2xx SSE body. A transport failure before the last event rejects with an
 * UpstreamError (or the signal's AbortError when the call was cancelled); after it, a dropped
 * connection lost nothing. An event cut off by the end of the body is never yielded: the caller
 * sees a stream without its terminal event (truncated), not a malformed one. Leaving the loop early (the caller stopped pulling, or a failure)
 * destroys the body, which closes the upstream connection at once.
 */
export async function* readServerSentEvents(body: Dispatcher.ResponseData['body'], options: ServerSentEventsOptions): AsyncGenerator<EventSourceMessage> {
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  const decoder = new TextDecoder();
  let sawLast = false;
  let ended = false;
  let dropTimer: NodeJS.Timeout | undefined;
  try {
    try {
      for await (const bytes of body as AsyncIterable<Buffer>) {
        if (sawLast) continue;
        parser.feed(decoder.decode(bytes, { stream: true }));
        while (events.length > 0 && !sawLast) {
          const event = events.shift() as EventSourceMessage;
          if (options.isLast?.(event)) {
            sawLast = true;
            dropTimer = setTimeout(() => body.destroy(), END_AFTER_LAST_EVENT_MS);
          }
          yield event;
        }
      }
      ended = true;
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      options.signal.throwIfAborted();
      if (!sawLast) throw upstreamErrorFromTransport(options.provider, error, 'body');
      ended = true;
    }
  } finally {
    if (dropTimer) clearTimeout(dropTimer);
    if (!ended) body.destroy();
  }
}

/** Parses one stream record's data as JSON; data that is not JSON is a `malformed` failure naming the record (`event` or `chunk`). */
export function parseStreamJson(data: string, provider: string, record: 'event' | 'chunk'): unknown {
  try {
    return JSON.parse(data) as unknown;
  } catch (error) {
    throw new UpstreamError(`upstream sent a stream ${record} that is not JSON`, { provider, kind: 'malformed', cause: error });
  }
}

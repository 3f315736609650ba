/**
 * Reads Bedrock's binary event stream (`application/vnd.amazon.eventstream`, the framing every AWS
 * streaming API uses) one message at a time, only as fast as the caller pulls. Each message is
 * framed here by its length prelude and decoded by AWS's own codec (@smithy/eventstream-codec),
 * which checks both CRCs; the JSON payload of an event or exception is parsed here.
 */
import type { Dispatcher } from 'undici';
import { EventStreamCodec, type Message } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { UpstreamError } from '../upstream-error.js';
import { upstreamErrorFromTransport } from '../upstream-http.js';

/** The prelude (total and header lengths) and its CRC: a message is at least this long, plus its own CRC. */
const PRELUDE_BYTES = 12;
/** A message larger than this is no Bedrock event: the stream is garbage. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** One decoded message: its `:message-type` (event, exception, error), its type and its JSON payload. */
export interface EventStreamMessage {
  readonly messageType: string;
  /** `:event-type` of an event, `:exception-type` of an exception, `:error-code` of an error. */
  readonly type: string;
  readonly payload: unknown;
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);

function headerText(message: Message, name: string): string | undefined {
  const header = message.headers[name];
  return header?.type === 'string' ? header.value : undefined;
}

function decoded(frame: Uint8Array, provider: string): EventStreamMessage {
  let message: Message;
  try {
    message = codec.decode(frame);
  } catch (error) {
    throw new UpstreamError('upstream sent an event stream message that does not decode', { provider, kind: 'malformed', cause: error });
  }
  const messageType = headerText(message, ':message-type') ?? '';
  const type = headerText(message, ':event-type') ?? headerText(message, ':exception-type') ?? headerText(message, ':error-code') ?? '';
  const text = toUtf8(message.body);
  let payload: unknown = {};
  if (text !== '') {
    try {
      payload = JSON.parse(text) as unknown;
    } catch (error) {
      // An `error` message's body may be plain text: its message.
      if (messageType !== 'error') throw new UpstreamError('upstream sent a stream event that is not JSON', { provider, kind: 'malformed', cause: error });
      payload = { message: text };
    }
  }
  return { messageType, type, payload };
}

/**
 * Yields every message of a 2xx event-stream body. A transport failure rejects with an
 * UpstreamError (or the signal's AbortError when the call was cancelled); a message cut off by the
 * end of the body is never yielded, so the caller sees a stream without its last events
 * (truncated). Leaving the loop early destroys the body, which closes the upstream connection.
 */
export async function* readEventStream(
  body: Dispatcher.ResponseData['body'],
  options: { readonly provider: string; readonly signal: AbortSignal },
): AsyncGenerator<EventStreamMessage> {
  let buffered: Buffer = Buffer.alloc(0);
  let ended = false;
  try {
    try {
      for await (const bytes of body as AsyncIterable<Buffer>) {
        buffered = buffered.length === 0 ? bytes : Buffer.concat([buffered, bytes]);
        while (buffered.length >= PRELUDE_BYTES) {
          const total = buffered.readUInt32BE(0);
          if (total < PRELUDE_BYTES + 4 || total > MAX_MESSAGE_BYTES) {
            throw new UpstreamError(`upstream sent an event stream message of ${total} bytes`, { provider: options.provider, kind: 'malformed' });
          }
          if (buffered.length < total) break;
          const frame = buffered.subarray(0, total);
          buffered = buffered.subarray(total);
          yield decoded(frame, options.provider);
        }
      }
      ended = true;
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      options.signal.throwIfAborted();
      throw upstreamErrorFromTransport(options.provider, error, 'body');
    }
  } finally {
    if (!ended) body.destroy();
  }
}

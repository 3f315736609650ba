import { messageCodec, type UsageEvent, type UsageEventBatch, type UsageEventBatchOutput, type UsageEventOutput } from '@gateway/proto';

const codec = messageCodec<UsageEvent, UsageEventOutput>('gateway.usage.v1.UsageEvent');
const batchCodec = messageCodec<UsageEventBatch, UsageEventBatchOutput>('gateway.usage.v1.UsageEventBatch');

/** Encodes a usage event as protobuf bytes, the payload on USAGE_SUBJECT. */
export function encodeUsageEvent(event: UsageEvent): Uint8Array {
  return codec.encode(event);
}

/**
 * Decodes a usage event. Throws on bytes that are not a UsageEvent; consumers treat that as a
 * poison message.
 */
export function decodeUsageEvent(bytes: Uint8Array): UsageEventOutput {
  return codec.decode(bytes);
}

/** Encodes several usage events as one UsageEventBatch payload, published on USAGE_SUBJECT too. */
export function encodeUsageEventBatch(events: UsageEvent[]): Uint8Array {
  return batchCodec.encode({ events });
}

/**
 * Decodes the events of one message on USAGE_SUBJECT: a UsageEventBatch's events, or the one
 * UsageEvent it holds (a message of a single event decodes as a batch of none; see
 * UsageEventBatch). Throws on bytes that are neither; consumers treat that as a poison message.
 */
export function decodeUsageEvents(bytes: Uint8Array): UsageEventOutput[] {
  const batch = batchCodec.decode(bytes);
  return batch.events.length > 0 ? batch.events : [codec.decode(bytes)];
}

import { messageCodec, type UsageEvent, type UsageEventOutput } from '@gateway/proto';

const codec = messageCodec<UsageEvent, UsageEventOutput>('gateway.usage.v1.UsageEvent');

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

/**
 * The stream of request bodies: a RequestBodies (gateway.request_log.v1) for each request whose
 * key or team has `log_bodies` on, for the request log alone. A stream of its own, beside the usage
 * stream and never in it: bodies are large and optional, and must never take the room the usage
 * stream keeps for billable events. Bounded and lossy on purpose (`discard: old`): when full it
 * forgets its oldest bodies, which only the log would have shown. Published off the request path:
 * a request never waits for its bodies to be stored, and never fails because they were not.
 */
import type { Logger } from '@gateway/logger';
import { messageCodec, type RequestBodies, type RequestBodiesOutput } from '@gateway/proto';
import type { NatsConnection } from 'nats';
import { type SideStreamNames, sideStreamLimits, sideStreamNamesOf } from './side-stream.js';
import { SideStreamPublisher, type SideStreamPublisherOptions } from './side-stream-publisher.js';

/** A bodies stream's name and subject. */
export type BodiesNames = SideStreamNames;

/**
 * The bodies stream of a usage stream: `BODIES` and `bodies.v1.request` beside the default USAGE;
 * `<name>_BODIES` and `<name lower-cased>.bodies.v1.request` beside another.
 */
export const bodiesNames: (usageStream?: string) => BodiesNames = sideStreamNamesOf('bodies');

/**
 * The bodies stream's limits by default, for ensureSideStream: a day, and 256 MiB (about 4,000
 * requests at the 64 KiB two bodies may take).
 */
export const BODIES_LIMITS = sideStreamLimits(256 * 1024 * 1024);

const codec = messageCodec<RequestBodies, RequestBodiesOutput>('gateway.request_log.v1.RequestBodies');

/** Encodes a request's bodies as protobuf bytes, the payload on the bodies subject. */
export function encodeRequestBodies(bodies: RequestBodies): Uint8Array {
  return codec.encode(bodies);
}

/** Decodes a request's bodies; throws on bytes that are not one (a poison message). */
export function decodeRequestBodies(bytes: Uint8Array): RequestBodiesOutput {
  return codec.decode(bytes);
}

/** What a bodies publisher holds at most and where it publishes. */
export type BodiesPublisherOptions = SideStreamPublisherOptions;

/**
 * Publishes request bodies to JetStream, each once (the event id is the message id), in the
 * background; see SideStreamPublisher: the request log loses a body, never a request its time.
 */
export class BodiesPublisher extends SideStreamPublisher<RequestBodies> {
  constructor(nats: Promise<NatsConnection> | NatsConnection, logger: Logger, options: BodiesPublisherOptions) {
    super(nats, logger, options, { encode: encodeRequestBodies, what: 'request bodies' });
  }
}

/**
 * NATS JetStream plumbing shared by the edge (publishing usage events) and metering (consuming
 * them): the usage stream and subject, the protobuf payload codec, a connection that reconnects
 * forever, a never-blocking publisher, and a durable consumer that acknowledges only committed work.
 * The request log's side streams (refused requests, bodies, tool calls). Also the core-NATS
 * subject and codec of the executors' deployment health reports (router).
 */
export * from './usage-stream.js';
export * from './usage-codec.js';
export * from './connect-nats.js';
export * from './usage-publisher.js';
export * from './durable-consumer.js';
export * from './deployment-health.js';
export * from './single-timeout.js';
export type { NatsConnection } from 'nats';
export * from './refused-stream.js';
export * from './consumer-start.js';
export * from './bodies-stream.js';
export * from './side-stream.js';
export * from './side-stream-publisher.js';
export * from './tool-calls-stream.js';

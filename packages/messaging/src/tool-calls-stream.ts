/**
 * The stream of MCP tool calls: a ToolCallEvent (gateway.request_log.v1) for each tools/call the
 * edge answered at /mcp, for the request log alone. A stream of its own, beside the usage stream
 * and never in it (the usage stream keeps its room for billable events; a tool call's usage event
 * is still published there, for metering), bounded and lossy on purpose (`discard: old`): when
 * full it forgets its oldest calls, which only the log would have shown. Published off the
 * request path: a call never waits for its row, and never fails because there was none.
 */
import type { Logger } from '@gateway/logger';
import { messageCodec, type ToolCallEvent, type ToolCallEventOutput } from '@gateway/proto';
import type { NatsConnection } from 'nats';
import { type SideStreamNames, sideStreamLimits, sideStreamNamesOf } from './side-stream.js';
import { SideStreamPublisher, type SideStreamPublisherOptions } from './side-stream-publisher.js';

/** A tool-calls stream's name and subject. */
export type ToolCallNames = SideStreamNames;

/**
 * The tool-calls stream of a usage stream: `TOOL_CALLS` and `tool_calls.v1.call` beside the
 * default USAGE; `<name>_TOOL_CALLS` and `<name lower-cased>.tool_calls.v1.call` beside another.
 */
export const toolCallNames: (usageStream?: string) => ToolCallNames = sideStreamNamesOf('tool_calls', 'call');

/** The tool-calls stream's limits by default, for ensureSideStream: a day, and 64 MiB (about 200,000 calls). */
export const TOOL_CALL_LIMITS = sideStreamLimits(64 * 1024 * 1024);

const codec = messageCodec<ToolCallEvent, ToolCallEventOutput>('gateway.request_log.v1.ToolCallEvent');

/** Encodes a tool call as protobuf bytes, the payload on the tool-calls subject. */
export function encodeToolCallEvent(event: ToolCallEvent): Uint8Array {
  return codec.encode(event);
}

/** Decodes a tool call; throws on bytes that are not one (a poison message). */
export function decodeToolCallEvent(bytes: Uint8Array): ToolCallEventOutput {
  return codec.decode(bytes);
}

/** Publishes tool calls to JetStream, each once, in the background; see SideStreamPublisher. */
export class ToolCallPublisher extends SideStreamPublisher<ToolCallEvent> {
  constructor(nats: Promise<NatsConnection> | NatsConnection, logger: Logger, options: SideStreamPublisherOptions) {
    super(nats, logger, options, { encode: encodeToolCallEvent, what: 'tool call' });
  }
}

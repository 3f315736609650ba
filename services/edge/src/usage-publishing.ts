/**
 * The edge's NATS connection and what it publishes on it: usage events (handed to metering when
 * NATS does not take them), and, with a request log, refused requests, kept bodies and MCP tool
 * calls; at shutdown what is held is flushed, and usage NATS did not take is handed to metering.
 */
import { callUnary } from '@gateway/grpc';
import {
  BodiesPublisher,
  bodiesNames,
  connectNats,
  drainNats,
  ensureUsageStream,
  followConnection,
  refusedNames,
  ToolCallPublisher,
  toolCallNames,
  UsagePublisher,
  usageNames,
} from '@gateway/messaging';
import type { RunContext } from '@gateway/observability';
import type { RecordUsageEventsRequest, RecordUsageEventsResponseOutput, UsageEventOutput, UsageServiceClient } from '@gateway/proto';
import type { EdgeConfig } from './config.js';
import type { EdgeDependencies } from './dependencies.js';
import { registerUsagePublisherMetrics } from './usage-metrics.js';

/** The publishers among the edge's dependencies. */
export type UsagePublishing = Pick<EdgeDependencies, 'usage' | 'refusals' | 'bodies' | 'toolCalls'>;

/**
 * Connects to NATS without waiting: the edge serves while NATS is unreachable, and usage events
 * queue until the first connection (then the stream is made sure of, so events never wait on
 * metering). `requestLog`: whether there is a request log to publish refusals and bodies for.
 */
export function openUsagePublishing(
  { config, logger, registry, lifecycle, open }: RunContext<EdgeConfig>,
  metering: UsageServiceClient,
  requestLog: boolean,
): UsagePublishing {
  const nats = open(connectNats(config.NATS_URL, 'edge', logger, registry), (connection) => drainNats(connection, 2_000));
  const usageStream = usageNames(config.USAGE_STREAM);
  void nats
    .then((connection) =>
      ensureUsageStream(connection, {
        ...usageStream,
        replicas: config.USAGE_STREAM_REPLICAS,
        maxAgeMs: config.USAGE_STREAM_MAX_AGE_HOURS * 3_600_000,
        maxBytes: config.USAGE_STREAM_MAX_BYTES,
        logger,
      }),
    )
    .catch((error: unknown) => logger.warn({ err: error }, 'usage stream not ensured'));
  /** Meters usage events through metering directly: for the events NATS does not take (USAGE_DELIVERY.md). */
  const recordUsage = async (events: UsageEventOutput[], timeoutMs: number) => {
    await callUnary<RecordUsageEventsRequest, RecordUsageEventsResponseOutput>(metering, metering.RecordUsageEvents, { events }, { deadlineMs: timeoutMs });
  };
  const usage = new UsagePublisher(nats, logger, {
    subject: usageStream.subject,
    maxQueue: config.EDGE_USAGE_QUEUE_MAX_EVENTS,
    handOverTo: recordUsage,
    handOverAfterMs: config.EDGE_USAGE_HANDOVER_AFTER_MS,
  });
  const natsState = followConnection(nats);
  registerUsagePublisherMetrics(registry, usage);
  // Requests refused before a model (rate limits, budgets, allow-lists), for the request log only:
  // published only when there is one, on a stream of their own that it creates (never the usage
  // stream); bounded, never handed over, dropped when NATS cannot take them.
  const refusals = requestLog ? new UsagePublisher(nats, logger, { subject: refusedNames(config.USAGE_STREAM).subject, maxQueue: 10_000 }) : undefined;
  // The bodies of requests whose key or team keeps them, likewise: only with a request log, on a
  // bounded stream of their own that it creates, sent after the answer and dropped rather than held.
  const bodies = requestLog
    ? new BodiesPublisher(nats, logger, { subject: bodiesNames(config.USAGE_STREAM).subject, maxPendingBytes: config.REQUEST_LOG_BODY_BUFFER_BYTES })
    : undefined;
  // The MCP tool calls answered at /mcp, likewise: only with a request log, on a bounded stream of
  // their own that it creates, sent after the answer and dropped rather than held.
  const toolCalls = requestLog
    ? new ToolCallPublisher(nats, logger, { subject: toolCallNames(config.USAGE_STREAM).subject, maxPendingBytes: 8 * 1024 * 1024 })
    : undefined;
  lifecycle.onStop(async () => {
    // Disconnected, nothing can be acknowledged: no wait, what is held goes to metering at once.
    await usage.flush(natsState.connected ? 5_000 : 0);
    // What NATS did not take (it is unreachable) goes to metering, which meters each event once by its
    // id: a rollout during an outage loses no usage.
    const held = usage.pending;
    const handed = await usage.handOver(recordUsage, 5_000);
    if (held > 0 || handed > 0)
      logger[handed >= held ? 'warn' : 'error']({ pending: held, handed_over: handed }, 'usage events NATS did not take were handed to metering at shutdown');
    await refusals?.flush(natsState.connected ? 1_000 : 0);
    refusals?.close();
    await bodies?.flush(natsState.connected ? 1_000 : 0);
    await toolCalls?.flush(natsState.connected ? 1_000 : 0);
  });
  return { usage, ...(refusals && { refusals }), ...(bodies && { bodies }), ...(toolCalls && { toolCalls }) };
}

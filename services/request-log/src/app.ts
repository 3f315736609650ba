/**
 * The request-log service, wired: a durable JetStream consumer of its own on the usage stream
 * (every replica shares it, so each event is written by one), and another on the refused-requests
 * stream (requests refused before a model, which the edge publishes only there), writing one row per request to
 * PostgreSQL in batches and acknowledging each message once its batch is committed; a third on the
 * bodies stream (the prompts and answers of the keys that keep them), into a table of their own with
 * a shorter retention; a fourth on the tool-calls stream (the MCP tool calls the edge answered at
 * /mcp), one row per call in a table of their own; the daily partitions' upkeep; and the
 * RequestLogService the edge searches.
 */
import type { Catalog } from '@gateway/catalog';
import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer } from '@gateway/grpc';
import type { Logger } from '@gateway/logger';
import {
  type BodiesNames,
  bodiesNames,
  ConsumerStart,
  decodeRequestBodies,
  decodeUsageEvents,
  BODIES_LIMITS,
  ensureSideStream,
  REFUSED_LIMITS,
  type SideStreamNames,
  type NatsConnection,
  PoisonMessageError,
  type RefusedNames,
  refusedNames,
  type RunningConsumer,
  DEFAULT_BACKOFF_MS,
  decodeToolCallEvent,
  TOOL_CALL_LIMITS,
  type ToolCallNames,
  toolCallNames,
  USAGE_STREAM,
  USAGE_SUBJECT,
} from '@gateway/messaging';
import { metric, type prometheus, serviceMetrics } from '@gateway/observability';
import { loadGatewayGrpc, type UsageEventOutput } from '@gateway/proto';
import type pg from 'pg';
import { type DatabaseAvailability, watchDatabase } from './database-availability.js';
import { HeldMessages } from './held-messages.js';
import { type PartitionedTable, partitionUpkeep, type Upkeep } from './partitions.js';
import { BODIES_COLUMNS, type BodiesRow, bodiesRow } from './request-bodies.js';
import { QUERY_RESULTS, requestLogHandlers } from './request-log-handlers.js';
import { REQUEST_COLUMNS, type RequestRow, requestRow } from './request-record.js';
import { createRequestWriter, type PartitionedRow, type Written } from './request-writer.js';
import { TOOL_CALL_COLUMNS, type ToolCallRow, toolCallRow } from './tool-call-record.js';

/** The fully qualified name the RequestLogService is registered and health-checked under. */
export const REQUEST_LOG_SERVICE_NAME = 'gateway.request_log.v1.RequestLogService';

/** The durable consumer name: every request-log replica shares it, apart from metering's. */
export const REQUEST_LOG_DURABLE = 'request-log';

/** The poison reasons, each exported from 0. */
export const POISON_REASONS = ['undecodable', 'missing_event_id', 'missing_key_id', 'missing_received_at'] as const;

/** What a writer did with each row (or body) it was given, each exported from 0. */
const WRITTEN_RESULTS = ['inserted', 'duplicate', 'expired'];

/** A catalog that may change (a ReloadableFile of @gateway/config fits). */
export interface CatalogSource {
  readonly current: Catalog;
}

/** What the service is wired from; the stream fields exist so tests can use a stream of their own. */
export interface RequestLogDependencies {
  pool: pg.Pool;
  nc: NatsConnection;
  /** Prices each request as metering does. */
  catalog: Catalog | CatalogSource;
  logger: Logger;
  registry?: prometheus.Registry;
  /** Days kept (REQUEST_LOG_RETENTION_DAYS). */
  retentionDays: number;
  /** Days the bodies are kept (REQUEST_LOG_BODY_RETENTION_DAYS); 7 when not given. */
  bodyRetentionDays?: number;
  /** Partitions created ahead of today (REQUEST_LOG_PARTITIONS_AHEAD_DAYS). */
  aheadDays: number;
  /** Between two partition upkeeps (REQUEST_LOG_MAINTENANCE_INTERVAL_MS). */
  maintenanceIntervalMs: number;
  batchRows: number;
  batchDelayMs: number;
  /** The clock, in Unix ms (retention, default time ranges); tests move their own. */
  now?: () => number;
  stream?: string;
  subject?: string;
  subjects?: string[];
  replicas?: number;
  maxAgeMs?: number;
  maxBytes?: number;
  durableName?: string;
  /** The refused-requests stream the log also reads (refusedNames of the usage stream when not given). */
  refused?: RefusedNames;
  /** The bodies stream the log also reads (bodiesNames of the usage stream when not given). */
  bodies?: BodiesNames;
  /** The tool-calls stream the log also reads (toolCallNames of the usage stream when not given). */
  toolCalls?: ToolCallNames;
  /** The most bytes the bodies stream holds (REQUEST_LOG_BODY_STREAM_MAX_BYTES). */
  bodiesMaxBytes?: number;
  /** Redelivery delays after a failed write; see DurableConsumerOptions.backoffMs. */
  backoffMs?: number[];
  /** While PostgreSQL is away, between two probes of it (REQUEST_LOG_DATABASE_PROBE_INTERVAL_MS); 1 s when not given. */
  databaseProbeIntervalMs?: number;
  connectionAge?: ConnectionAge;
}

/** The service, wired and not yet started. */
export interface RequestLogServer {
  /** Serves RequestLogService and grpc.health.v1; listen on REQUEST_LOG_LISTEN_ADDR. */
  readonly grpc: GatewayServer;
  /** Ensures the usage stream, the partitions and the durable consumer, then consumes. */
  start(): Promise<void>;
  /** One partition upkeep now (the schedule runs it every maintenanceIntervalMs). */
  maintain(): Promise<Upkeep>;
  /** Stops consuming once the rows being written are committed (or handed back). */
  stop(): Promise<void>;
}

/** Creates the service; see the file's comment. */
export function createServer(dependencies: RequestLogDependencies): RequestLogServer {
  const { pool, nc, logger } = dependencies;
  const now = dependencies.now ?? Date.now;
  const stream = dependencies.stream ?? USAGE_STREAM;
  const durableName = dependencies.durableName ?? REQUEST_LOG_DURABLE;
  const catalog: CatalogSource = 'current' in dependencies.catalog ? dependencies.catalog : { current: dependencies.catalog };
  const availability = watchDatabase(pool, { intervalMs: dependencies.databaseProbeIntervalMs ?? 1_000, logger });
  const metrics = requestLogMetrics(dependencies.registry, { nc, stream, durableName, databaseUp: () => availability.up });
  const { poison } = metrics;
  const bodyRetentionDays = dependencies.bodyRetentionDays ?? 7;
  const { writer, bodiesWriter, toolCallWriter } = createWriters(dependencies, { now, availability, metrics, bodyRetentionDays });
  const skipping = skippingPoison(poison, logger);
  const requestRowOf = skipping('usage event', (event: UsageEventOutput) => requestRow(event, catalog.current));
  const bodiesRowOf = skipping('request bodies', bodiesRow);
  const toolCallRowOf = skipping('tool call', toolCallRow);

  const upkeep = partitionUpkeep(pool, {
    now,
    aheadDays: dependencies.aheadDays,
    retentionDays: dependencies.retentionDays,
    bodyRetentionDays,
    intervalMs: dependencies.maintenanceIntervalMs,
    logger,
  });
  const handlers = requestLogHandlers({ pool, logger, now, retentionDays: dependencies.retentionDays, queries: metrics.queries });

  const refused = dependencies.refused ?? refusedNames(stream);
  const bodiesStream = dependencies.bodies ?? bodiesNames(stream);
  const toolCallStream = dependencies.toolCalls ?? toolCallNames(stream);
  let consumers: RunningConsumer[] = [];
  const held = new HeldMessages((dependencies.backoffMs ?? DEFAULT_BACKOFF_MS)[0]!);
  const starting = new ConsumerStart(nc, logger, 'request log start failed; retrying');
  // Each message acknowledged once the batch holding its rows is committed.
  const consume = <Message>(from: SideStreamNames, decode: (bytes: Uint8Array) => Message, write: (message: Message) => Promise<void>) =>
    starting.consumer<Message>({
      stream: from.stream,
      durableName,
      filterSubject: from.subject,
      decode,
      handle: async (message, delivery) => {
        held.hold(delivery);
        try {
          await write(message);
        } finally {
          held.release(delivery);
        }
      },
      onPoison: (reason) => poison.inc({ reason }),
      backoffMs: dependencies.backoffMs,
      logger,
    });

  return {
    grpc: createGatewayServer(
      [{ name: REQUEST_LOG_SERVICE_NAME, definition: loadGatewayGrpc().gateway.request_log.v1.RequestLogService.service, handlers }],
      connectionAgeOptions(dependencies.connectionAge),
    ),
    maintain: upkeep.maintain,
    start: async () => {
      await starting.usageStream(stream, dependencies);
      await starting.step(() => upkeep.maintain());
      upkeep.schedule();
      await starting.step(() => ensureSideStream(nc, refused, { ...REFUSED_LIMITS, replicas: dependencies.replicas }));
      const writeEvents = (events: UsageEventOutput[]) => writer.write(events.flatMap(requestRowOf));
      consumers = [
        await consume({ stream, subject: dependencies.subject ?? USAGE_SUBJECT }, decodeUsageEvents, writeEvents),
        await consume(refused, decodeUsageEvents, writeEvents),
      ];
      const bodiesLimits = { ...BODIES_LIMITS, maxBytes: dependencies.bodiesMaxBytes ?? BODIES_LIMITS.maxBytes, replicas: dependencies.replicas };
      await starting.step(() => ensureSideStream(nc, bodiesStream, bodiesLimits));
      consumers.push(await consume(bodiesStream, decodeRequestBodies, (bodies) => bodiesWriter.write(bodiesRowOf(bodies))));
      await starting.step(() => ensureSideStream(nc, toolCallStream, { ...TOOL_CALL_LIMITS, replicas: dependencies.replicas }));
      consumers.push(await consume(toolCallStream, decodeToolCallEvent, (event) => toolCallWriter.write(toolCallRowOf(event))));
    },
    stop: async () => {
      starting.cancel();
      // Nothing waits for PostgreSQL any more: what is held is handed back, for a replica that reaches it.
      availability.close();
      upkeep.stop();
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      consumers = [];
      await Promise.all([writer.flush(), bodiesWriter.flush(), toolCallWriter.flush()]);
      held.close();
    },
  };
}

/** The writers of the three tables, counting what each batch came to. */
function createWriters(
  dependencies: RequestLogDependencies,
  wiring: { now: () => number; availability: DatabaseAvailability; metrics: RequestLogMetrics; bodyRetentionDays: number },
) {
  const { metrics } = wiring;
  const writerOf = <Row extends PartitionedRow>(
    table: PartitionedTable,
    columns: readonly (keyof Row & string)[],
    retentionDays: number,
    onWritten: (written: Written) => void,
  ) =>
    createRequestWriter<Row>({
      pool: dependencies.pool,
      table,
      columns,
      batchRows: dependencies.batchRows,
      batchDelayMs: dependencies.batchDelayMs,
      retentionDays,
      now: wiring.now,
      availability: wiring.availability,
      onFailed: () => metrics.writeErrors.inc(),
      onWritten,
    });
  return {
    writer: writerOf<RequestRow>('request_log', REQUEST_COLUMNS, dependencies.retentionDays, (written) => {
      countWritten(metrics.rows, written);
      metrics.batchSeconds.observe(written.seconds);
    }),
    bodiesWriter: writerOf<BodiesRow>('request_bodies', BODIES_COLUMNS, wiring.bodyRetentionDays, (written) => countWritten(metrics.bodies, written)),
    toolCallWriter: writerOf<ToolCallRow>('tool_calls', TOOL_CALL_COLUMNS, dependencies.retentionDays, (written) => countWritten(metrics.toolCalls, written)),
  };
}

/** A message's row, or none for one the log can never hold: counted and skipped without its neighbours. */
function skippingPoison(poison: prometheus.Counter<'reason'>, logger: Logger) {
  return <Message, Row>(what: string, rowOf: (message: Message) => Row) =>
    (message: Message): Row[] => {
      try {
        return [rowOf(message)];
      } catch (error) {
        if (!(error instanceof PoisonMessageError)) throw error;
        poison.inc({ reason: error.reason });
        logger.error({ err: error, reason: error.reason }, `${what} can never be logged; skipped`);
        return [];
      }
    };
}

/** A writer's count of a batch, into a counter by result. */
function countWritten(counter: prometheus.Counter<'result'>, { inserted, duplicates, expired }: Written): void {
  counter.inc({ result: 'inserted' }, inserted);
  counter.inc({ result: 'duplicate' }, duplicates);
  counter.inc({ result: 'expired' }, expired);
}

type RequestLogMetrics = ReturnType<typeof requestLogMetrics>;

/** The service's metrics, each a row of the shared metric table. */
function requestLogMetrics(
  registry: prometheus.Registry | undefined,
  reads: { nc: NatsConnection; stream: string; durableName: string; databaseUp: () => boolean },
) {
  /** Usage messages not written yet (the consumer's pending and unacknowledged); NaN while NATS cannot be read. */
  const pendingMessages = async () => {
    try {
      const info = await (await reads.nc.jetstreamManager()).consumers.info(reads.stream, reads.durableName);
      return info.num_pending + info.num_ack_pending;
    } catch {
      return Number.NaN;
    }
  };
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  return serviceMetrics(registry, {
    rows: metric.counterBy('gateway_request_log_rows_total', 'Requests the log was given, by result (inserted; duplicate: already there, an event delivered again; expired: older than the retention).', 'result', WRITTEN_RESULTS),
    writeErrors: metric.counter('gateway_request_log_write_errors_total', 'Batches PostgreSQL failed to write (held until it answers when it is away, else redelivered).'),
    databaseUp: metric.gauge('gateway_request_log_database_up', 'Whether PostgreSQL takes the log\'s writes (1), or is away and the log holds its messages until it answers (0).', () => (reads.databaseUp() ? 1 : 0)),
    batchSeconds: metric.histogram('gateway_request_log_batch_seconds', 'Time to write one batch of rows, partition checks included.', [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]),
    poison: metric.counterBy('gateway_request_log_poison_messages_total', 'Usage messages or events the log can never hold, by reason.', 'reason', POISON_REASONS),
    bodies: metric.counterBy('gateway_request_log_bodies_total', 'Request bodies the log was given, by result (inserted; duplicate: delivered again; expired: older than the bodies retention).', 'result', WRITTEN_RESULTS),
    toolCalls: metric.counterBy('gateway_request_log_tool_calls_total', 'MCP tool calls the log was given, by result (inserted; duplicate: delivered again; expired: older than the retention).', 'result', WRITTEN_RESULTS),
    queries: metric.histogram('gateway_request_log_query_duration_seconds', "Reads of the log for its searches (SearchRequests, GetRequest, SearchToolCalls, GetToolCall), by result: ok; refused (the caller's, an invalid cursor say); error (PostgreSQL failed).", [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], ['result'], QUERY_RESULTS),
    pending: metric.gauge('gateway_request_log_pending_messages', "Usage messages the request log has not written yet (its consumer's pending and unacknowledged); NaN when NATS cannot be read.", pendingMessages),
  });
}

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
import { connectionAgeOptions, createGatewayServer, type ConnectionAge, GatewayError, type GatewayServer, unary } from '@gateway/grpc';
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
import {
  type GetRequestRequestOutput,
  type GetRequestResponse,
  type GetToolCallRequestOutput,
  type GetToolCallResponse,
  loadGatewayGrpc,
  type RequestBodiesOutput,
  type RequestLogServiceHandlers,
  type SearchRequestsRequestOutput,
  type SearchRequestsResponse,
  type SearchToolCallsRequestOutput,
  type SearchToolCallsResponse,
  type ToolCallEventOutput,
  type UsageEventOutput,
} from '@gateway/proto';
import type { JsMsg } from 'nats';
import type pg from 'pg';
import { watchDatabase } from './database-availability.js';
import { maintainPartitions } from './partitions.js';
import { BODIES_COLUMNS, type BodiesRow, bodiesRow, getBodies } from './request-bodies.js';
import { REQUEST_COLUMNS, type RequestRow, requestRow } from './request-record.js';
import { getRequest, searchRequests } from './request-search.js';
import { createRequestWriter } from './request-writer.js';
import { TOOL_CALL_COLUMNS, type ToolCallRow, toolCallRow } from './tool-call-record.js';
import { getToolCall, searchToolCalls } from './tool-call-search.js';

/** The fully qualified name the RequestLogService is registered and health-checked under. */
export const REQUEST_LOG_SERVICE_NAME = 'gateway.request_log.v1.RequestLogService';

/** The durable consumer name: every request-log replica shares it, apart from metering's. */
export const REQUEST_LOG_DURABLE = 'request-log';

/** The poison reasons, each exported from 0. */
export const POISON_REASONS = ['undecodable', 'missing_event_id', 'missing_key_id', 'missing_received_at'] as const;

/** What a writer did with each row (or body) it was given, each exported from 0. */
const WRITTEN_RESULTS = ['inserted', 'duplicate', 'expired'];

/** What a read of the log for a search came to, each exported from 0. */
const QUERY_RESULTS = ['ok', 'refused', 'error'];

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
  maintain(): Promise<{
    created: number[];
    dropped: number[];
    bodies: { created: number[]; dropped: number[] };
    toolCalls: { created: number[]; dropped: number[] };
  }>;
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
  /** Usage messages not written yet (the consumer's pending and unacknowledged); NaN while NATS cannot be read. */
  const pendingMessages = async () => {
    try {
      const info = await (await nc.jetstreamManager()).consumers.info(stream, durableName);
      return info.num_pending + info.num_ack_pending;
    } catch {
      return Number.NaN;
    }
  };
  // biome-ignore format: one metric a line, a table of name, help and the label each is counted by
  const metrics = serviceMetrics(dependencies.registry, {
    rows: metric.counterBy('gateway_request_log_rows_total', 'Requests the log was given, by result (inserted; duplicate: already there, an event delivered again; expired: older than the retention).', 'result', WRITTEN_RESULTS),
    writeErrors: metric.counter('gateway_request_log_write_errors_total', 'Batches PostgreSQL failed to write (held until it answers when it is away, else redelivered).'),
    databaseUp: metric.gauge('gateway_request_log_database_up', 'Whether PostgreSQL takes the log\'s writes (1), or is away and the log holds its messages until it answers (0).', () => (availability.up ? 1 : 0)),
    batchSeconds: metric.histogram('gateway_request_log_batch_seconds', 'Time to write one batch of rows, partition checks included.', [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]),
    poison: metric.counterBy('gateway_request_log_poison_messages_total', 'Usage messages or events the log can never hold, by reason.', 'reason', POISON_REASONS),
    bodies: metric.counterBy('gateway_request_log_bodies_total', 'Request bodies the log was given, by result (inserted; duplicate: delivered again; expired: older than the bodies retention).', 'result', WRITTEN_RESULTS),
    toolCalls: metric.counterBy('gateway_request_log_tool_calls_total', 'MCP tool calls the log was given, by result (inserted; duplicate: delivered again; expired: older than the retention).', 'result', WRITTEN_RESULTS),
    queries: metric.histogram('gateway_request_log_query_duration_seconds', "Reads of the log for its searches (SearchRequests, GetRequest, SearchToolCalls, GetToolCall), by result: ok; refused (the caller's, an invalid cursor say); error (PostgreSQL failed).", [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], ['result'], QUERY_RESULTS),
    pending: metric.gauge('gateway_request_log_pending_messages', "Usage messages the request log has not written yet (its consumer's pending and unacknowledged); NaN when NATS cannot be read.", pendingMessages),
  });
  const { writeErrors, batchSeconds, poison } = metrics;
  /** A writer's count of a batch, into a counter by result. */
  const writtenRows =
    (counter: prometheus.Counter<'result'>) =>
    ({ inserted, duplicates, expired }: { inserted: number; duplicates: number; expired: number }) => {
      counter.inc({ result: 'inserted' }, inserted);
      counter.inc({ result: 'duplicate' }, duplicates);
      counter.inc({ result: 'expired' }, expired);
    };
  const countRows = writtenRows(metrics.rows);
  const countBodies = writtenRows(metrics.bodies);
  const countToolCalls = writtenRows(metrics.toolCalls);
  const bodyRetentionDays = dependencies.bodyRetentionDays ?? 7;
  const availability = watchDatabase(pool, { intervalMs: dependencies.databaseProbeIntervalMs ?? 1_000, logger });
  const countFailure = () => writeErrors.inc();

  const writer = createRequestWriter<RequestRow>({
    pool,
    table: 'request_log',
    columns: REQUEST_COLUMNS,
    batchRows: dependencies.batchRows,
    batchDelayMs: dependencies.batchDelayMs,
    retentionDays: dependencies.retentionDays,
    now,
    availability,
    onFailed: countFailure,
    onWritten: (written) => {
      countRows(written);
      batchSeconds.observe(written.seconds);
    },
  });

  const bodiesWriter = createRequestWriter<BodiesRow>({
    pool,
    table: 'request_bodies',
    columns: BODIES_COLUMNS,
    batchRows: dependencies.batchRows,
    batchDelayMs: dependencies.batchDelayMs,
    retentionDays: bodyRetentionDays,
    now,
    availability,
    onFailed: countFailure,
    onWritten: countBodies,
  });

  const toolCallWriter = createRequestWriter<ToolCallRow>({
    pool,
    table: 'tool_calls',
    columns: TOOL_CALL_COLUMNS,
    batchRows: dependencies.batchRows,
    batchDelayMs: dependencies.batchDelayMs,
    retentionDays: dependencies.retentionDays,
    now,
    availability,
    onFailed: countFailure,
    onWritten: countToolCalls,
  });

  /** The row of one tool-call message; a call the log can never hold is counted and skipped. */
  const toolCallRowsOf = (event: ToolCallEventOutput): ToolCallRow[] => {
    try {
      return [toolCallRow(event)];
    } catch (error) {
      if (!(error instanceof PoisonMessageError)) throw error;
      poison.inc({ reason: error.reason });
      logger.error({ err: error, reason: error.reason }, 'tool call can never be logged; skipped');
      return [];
    }
  };

  /** The rows of one message; an event the log can never hold is counted and skipped without its neighbours. */
  const rowsOf = (events: UsageEventOutput[]): RequestRow[] =>
    events.flatMap((event) => {
      try {
        return [requestRow(event, catalog.current)];
      } catch (error) {
        if (!(error instanceof PoisonMessageError)) throw error;
        poison.inc({ reason: error.reason });
        logger.error({ err: error, reason: error.reason }, 'usage event can never be logged; skipped');
        return [];
      }
    });

  /** The row of one bodies message; bodies the log can never hold are counted and skipped. */
  const bodiesRowsOf = (bodies: RequestBodiesOutput): BodiesRow[] => {
    try {
      return [bodiesRow(bodies)];
    } catch (error) {
      if (!(error instanceof PoisonMessageError)) throw error;
      poison.inc({ reason: error.reason });
      logger.error({ err: error, reason: error.reason }, 'request bodies can never be logged; skipped');
      return [];
    }
  };

  const maintain = async () => {
    const options = { nowMs: now(), aheadDays: dependencies.aheadDays };
    const done = await maintainPartitions(pool, { ...options, retentionDays: dependencies.retentionDays });
    // The bodies leave at their own, shorter, retention.
    const bodies = await maintainPartitions(pool, { ...options, retentionDays: bodyRetentionDays, table: 'request_bodies' });
    if (done.created.length > 0 || done.dropped.length > 0) logger.info(done, 'request log partitions maintained');
    // The tool calls are kept as long as the requests.
    const toolCalls = await maintainPartitions(pool, { ...options, retentionDays: dependencies.retentionDays, table: 'tool_calls' });
    if (bodies.created.length > 0 || bodies.dropped.length > 0) logger.info(bodies, 'request bodies partitions maintained');
    if (toolCalls.created.length > 0 || toolCalls.dropped.length > 0) logger.info(toolCalls, 'tool calls partitions maintained');
    return { ...done, bodies, toolCalls };
  };
  let maintenanceTimer: NodeJS.Timeout | undefined;
  const scheduleMaintenance = () => {
    maintenanceTimer = setTimeout(() => {
      maintain()
        .catch((error: unknown) => logger.warn({ err: error }, 'request log partition upkeep failed; retrying at the next interval'))
        .finally(() => {
          if (maintenanceTimer) scheduleMaintenance();
        });
    }, dependencies.maintenanceIntervalMs);
    maintenanceTimer.unref();
  };

  const report = (error: unknown, method: string) => logger.error({ err: error, method }, 'request log search failed');
  /** PostgreSQL failing is UNAVAILABLE; the service's own refusals pass as they are. */
  const database = async <T>(work: () => Promise<T>): Promise<T> => {
    const done = metrics.queries.startTimer();
    try {
      const found = await work();
      done({ result: 'ok' });
      return found;
    } catch (error) {
      done({ result: error instanceof GatewayError ? 'refused' : 'error' });
      if (error instanceof GatewayError) throw error;
      report(error, 'query');
      throw GatewayError.of('store_unavailable', 'The request log could not be read.', { cause: error });
    }
  };
  /** A record by the id a Get names (NOT_FOUND when none), with its bodies when asked for and kept. */
  const withBodies = async <Found extends { event_id?: string; received_at_ms?: unknown }>(
    request: { id?: string; include_bodies?: boolean },
    what: string,
    get: (id: string) => Promise<Found | undefined>,
  ) => {
    const id = request.id ?? '';
    if (!id || id.length > 200) throw GatewayError.of('invalid_request', "'id' must be an event id or a request id.", { param: 'id' });
    const found = await database(() => get(id));
    if (!found) throw GatewayError.of('not_found', `The request log has no ${what} ${id}.`, { param: 'id' });
    const bodies = request.include_bodies ? await database(() => getBodies(pool, found.event_id ?? '', Number(found.received_at_ms ?? 0))) : undefined;
    return { found, bodies };
  };
  const handlers: RequestLogServiceHandlers = {
    SearchRequests: unary<SearchRequestsRequestOutput, SearchRequestsResponse>(
      (request) => database(() => searchRequests(pool, request, { nowMs: now(), retentionDays: dependencies.retentionDays })),
      'SearchRequests',
      report,
    ),
    GetRequest: unary<GetRequestRequestOutput, GetRequestResponse>(
      async (request) => {
        const { found, bodies } = await withBodies(request, 'request', (id) => getRequest(pool, id));
        return { request: found, ...(bodies && { bodies }) };
      },
      'GetRequest',
      report,
    ),
    SearchToolCalls: unary<SearchToolCallsRequestOutput, SearchToolCallsResponse>(
      (request) => database(() => searchToolCalls(pool, request, { nowMs: now(), retentionDays: dependencies.retentionDays })),
      'SearchToolCalls',
      report,
    ),
    GetToolCall: unary<GetToolCallRequestOutput, GetToolCallResponse>(
      async (request) => {
        // A call's arguments and result are kept as its bodies, under its event id.
        const { found, bodies } = await withBodies(request, 'tool call', (id) => getToolCall(pool, id));
        return { tool_call: found, ...(bodies && { bodies }) };
      },
      'GetToolCall',
      report,
    ),
  };

  const refused = dependencies.refused ?? refusedNames(stream);
  const bodiesStream = dependencies.bodies ?? bodiesNames(stream);
  const toolCallStream = dependencies.toolCalls ?? toolCallNames(stream);
  let consumers: RunningConsumer[] = [];
  // The messages being written: while PostgreSQL is away they wait for it for as long as it takes,
  // each kept from redelivery (JetStream's "in progress") before its acknowledgement time runs out,
  // so that no replica takes them meanwhile and each is written once, as soon as it returns.
  const beingWritten = new Set<JsMsg>();
  const ackWaitMs = (dependencies.backoffMs ?? DEFAULT_BACKOFF_MS)[0]!;
  let keepAlive: NodeJS.Timeout | undefined;
  const inProgress = (delivery: JsMsg) => {
    beingWritten.add(delivery);
    keepAlive ??= setInterval(
      () => {
        if (beingWritten.size === 0) {
          clearInterval(keepAlive);
          keepAlive = undefined;
        }
        for (const held of beingWritten) held.working();
      },
      Math.max(100, Math.floor(ackWaitMs / 3)),
    ).unref();
  };
  const starting = new ConsumerStart(nc, logger, 'request log start failed; retrying');

  return {
    grpc: createGatewayServer(
      [{ name: REQUEST_LOG_SERVICE_NAME, definition: loadGatewayGrpc().gateway.request_log.v1.RequestLogService.service, handlers }],
      connectionAgeOptions(dependencies.connectionAge),
    ),
    maintain,
    start: async () => {
      await starting.usageStream(stream, dependencies);
      await starting.step(() => maintain());
      scheduleMaintenance();
      await starting.step(() => ensureSideStream(nc, refused, { ...REFUSED_LIMITS, replicas: dependencies.replicas }));
      // Each message acknowledged once the batch holding its rows is committed.
      const consume = <Message>(from: SideStreamNames, decode: (bytes: Uint8Array) => Message, write: (message: Message) => Promise<void>) =>
        starting.consumer<Message>({
          stream: from.stream,
          durableName,
          filterSubject: from.subject,
          decode,
          handle: async (message, delivery) => {
            inProgress(delivery);
            try {
              await write(message);
            } finally {
              beingWritten.delete(delivery);
            }
          },
          onPoison: (reason) => poison.inc({ reason }),
          backoffMs: dependencies.backoffMs,
          logger,
        });
      const writeEvents = (events: UsageEventOutput[]) => writer.write(rowsOf(events));
      consumers = [
        await consume({ stream, subject: dependencies.subject ?? USAGE_SUBJECT }, decodeUsageEvents, writeEvents),
        await consume(refused, decodeUsageEvents, writeEvents),
      ];
      const bodiesLimits = { ...BODIES_LIMITS, maxBytes: dependencies.bodiesMaxBytes ?? BODIES_LIMITS.maxBytes, replicas: dependencies.replicas };
      await starting.step(() => ensureSideStream(nc, bodiesStream, bodiesLimits));
      consumers.push(await consume(bodiesStream, decodeRequestBodies, (bodies) => bodiesWriter.write(bodiesRowsOf(bodies))));
      await starting.step(() => ensureSideStream(nc, toolCallStream, { ...TOOL_CALL_LIMITS, replicas: dependencies.replicas }));
      consumers.push(await consume(toolCallStream, decodeToolCallEvent, (event) => toolCallWriter.write(toolCallRowsOf(event))));
    },
    stop: async () => {
      starting.cancel();
      // Nothing waits for PostgreSQL any more: what is held is handed back, for a replica that reaches it.
      availability.close();
      clearTimeout(maintenanceTimer);
      maintenanceTimer = undefined;
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      consumers = [];
      await Promise.all([writer.flush(), bodiesWriter.flush(), toolCallWriter.flush()]);
      clearInterval(keepAlive);
      keepAlive = undefined;
    },
  };
}

import { RetentionPolicy, StorageType, DiscardPolicy, nanos, type NatsConnection, type StreamInfo } from 'nats';

/** The JetStream stream that holds usage events. */
export const USAGE_STREAM = 'USAGE';

/** The subject the edge publishes one gateway.usage.v1.UsageEvent per metered request on. */
export const USAGE_SUBJECT = 'usage.v1.completion';

/** Every subject the usage stream captures: all versions' usage events live in one stream. */
export const USAGE_SUBJECTS = ['usage.v1.>'];

/**
 * How long JetStream remembers message ids to drop duplicates. Two minutes covers a publisher's
 * retries after a lost acknowledgement, which is what the de-duplication exists for.
 */
export const USAGE_DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/**
 * How long usage events stay in the stream by default (USAGE_STREAM_MAX_AGE_HOURS): 72 hours, so a
 * metering outage or a lost Redis found on a Monday morning can still be re-metered from the events
 * of the weekend. Longer costs storage in proportion (see the sizing table in deploy/README.md);
 * billing's own record is Redis, not the stream.
 */
export const USAGE_MAX_AGE_MS = 72 * 60 * 60 * 1000;

/**
 * The most bytes the usage stream holds on each server by default (USAGE_STREAM_MAX_BYTES): 1 GiB,
 * which fits a development NATS; a deployment sets it from its volume (deploy/README.md).
 */
export const USAGE_MAX_BYTES = 1024 * 1024 * 1024;

/** A usage stream's name and subjects: what a gateway's edges publish to and its metering reads. */
export interface UsageNames {
  stream: string;
  /** The subject of usage events. */
  subject: string;
  /** The subjects the stream captures. */
  subjects: string[];
}

/** What a usage stream may be called (a JetStream stream name, kept short and plain). */
export const USAGE_STREAM_NAME_PATTERN = '^[A-Za-z0-9_-]{1,32}$';

/**
 * The names of a usage stream. The default stream USAGE keeps the subjects `usage.v1.*`; another
 * stream (USAGE_STREAM, for gateways that share one NATS) prefixes them with its lower-cased name,
 * `<name>.usage.v1.*`, since two streams may not capture the same subjects.
 */
export function usageNames(stream: string = USAGE_STREAM): UsageNames {
  if (stream === USAGE_STREAM) return { stream, subject: USAGE_SUBJECT, subjects: [...USAGE_SUBJECTS] };
  const prefix = stream.toLowerCase();
  return { stream, subject: `${prefix}.${USAGE_SUBJECT}`, subjects: USAGE_SUBJECTS.map((subject) => `${prefix}.${subject}`) };
}

/** The usage stream settings of a consumer's config (metering, the request log). */
export interface UsageStreamConfig {
  readonly USAGE_STREAM: string;
  readonly USAGE_STREAM_REPLICAS: number;
  readonly USAGE_STREAM_MAX_AGE_HOURS: number;
  readonly USAGE_STREAM_MAX_BYTES: number;
}

/** The usage stream a consumer ensures at start, from its config: names, replicas and limits. */
export function usageStreamSettings(config: UsageStreamConfig): UsageNames & Required<Pick<UsageStreamOptions, 'replicas' | 'maxAgeMs' | 'maxBytes'>> {
  return {
    ...usageNames(config.USAGE_STREAM),
    replicas: config.USAGE_STREAM_REPLICAS,
    maxAgeMs: config.USAGE_STREAM_MAX_AGE_HOURS * 3_600_000,
    maxBytes: config.USAGE_STREAM_MAX_BYTES,
  };
}

/** Which stream to ensure; tests pass their own name and subjects so parallel runs never share one. */
export interface UsageStreamOptions {
  stream?: string;
  subjects?: string[];
  /**
   * How many servers keep each event (USAGE_STREAM_REPLICAS): 1 on a single server; 3 on a
   * cluster, so that an acknowledged event survives the loss of a server (JetStream acknowledges a
   * publish once a majority of the replicas stored it). Changing it on an existing stream
   * re-replicates it in place. A start only ever raises it: a lower value than the stream's
   * leaves the stream as it is (see ensureUsageStream).
   */
  replicas?: number;
  /** How long an event is kept (USAGE_STREAM_MAX_AGE_HOURS, in ms); default USAGE_MAX_AGE_MS. */
  maxAgeMs?: number;
  /**
   * The most bytes the stream holds on each server (USAGE_STREAM_MAX_BYTES); default
   * USAGE_MAX_BYTES. JetStream reserves it against the server's max_file_store, and refuses a
   * stream whose limit does not fit ("insufficient storage resources").
   */
  maxBytes?: number;
  /** Told when a start asked for fewer replicas than the stream has and kept the stream's. */
  logger?: { warn(details: object, message: string): void };
}

/** What a bounded stream is made of: its subjects, what a full one discards, and its limits. */
export interface BoundedStream {
  name: string;
  subjects: string[];
  discard: DiscardPolicy;
  maxAgeMs: number;
  maxBytes: number;
  replicas: number;
}

/**
 * The JetStream configuration of the gateway's event streams (usage, refused requests): kept on
 * file, bounded by age and bytes, and dropping a message id published again within
 * USAGE_DUPLICATE_WINDOW_MS (a publisher's retry after a lost acknowledgement).
 */
export function boundedStreamConfig(stream: BoundedStream) {
  return {
    name: stream.name,
    subjects: stream.subjects,
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: stream.discard,
    duplicate_window: nanos(USAGE_DUPLICATE_WINDOW_MS),
    max_age: nanos(stream.maxAgeMs),
    max_bytes: stream.maxBytes,
    num_replicas: stream.replicas,
  };
}

/**
 * Creates the usage stream, or updates it to this configuration when it exists. Idempotent, so
 * every publisher and consumer calls it at start. File storage because events are money. More than
 * one replica needs a NATS cluster with JetStream (a single server refuses it).
 *
 * Bounded by age and bytes, and a full stream refuses new events (`discard: new`) rather than
 * deleting the oldest (`old`), which may not be metered yet: a refused event stays with the edge
 * that published it, which holds and retries it (USAGE_DELIVERY.md), so nothing accepted is lost
 * while space comes back within the edge's hold. The age and byte limits of an existing stream are
 * set to this start's, so a change of USAGE_STREAM_MAX_AGE_HOURS or USAGE_STREAM_MAX_BYTES takes
 * effect at the next rollout. A lowered max_bytes is applied no lower than what the stream holds
 * (JetStream would otherwise delete the oldest events to fit, metered or not): the stream refuses
 * new events until its oldest age out, and a later start lowers it the rest of the way.
 *
 * The replica count is only ever raised here, never lowered: every pod runs this at start with its
 * own USAGE_STREAM_REPLICAS, and one pod left at the default 1 would otherwise take an R3 stream
 * down to a single copy. Lowering it is an operator's explicit act (`nats stream edit`).
 */
export async function ensureUsageStream(nc: NatsConnection, options: UsageStreamOptions = {}): Promise<StreamInfo> {
  const manager = await nc.jetstreamManager();
  const config = boundedStreamConfig({
    name: options.stream ?? USAGE_STREAM,
    subjects: options.subjects ?? USAGE_SUBJECTS,
    discard: DiscardPolicy.New,
    maxAgeMs: options.maxAgeMs ?? USAGE_MAX_AGE_MS,
    maxBytes: options.maxBytes ?? USAGE_MAX_BYTES,
    replicas: options.replicas ?? 1,
  });
  warnIfDiscardNewIsInexact(nc, config.name, options.logger);
  let existing: StreamInfo | undefined;
  try {
    existing = await manager.streams.info(config.name);
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      return await manager.streams.add(config);
    } catch (addError) {
      // Another process created it between our lookup and our add: fall through to update.
      if (!/already in use|already exists/i.test((addError as Error).message)) throw explainStorage(addError, config);
    }
  }
  existing ??= await manager.streams.info(config.name);
  const current = existing.config.num_replicas ?? 1;
  if (current > config.num_replicas) {
    options.logger?.warn(
      { stream: config.name, replicas: current, requested: config.num_replicas },
      'usage stream keeps its replicas: a start never lowers them (lower them with `nats stream edit`)',
    );
    config.num_replicas = current;
  }
  // JetStream meets a max_bytes below what the stream holds by deleting its oldest events at once,
  // metered or not: a start keeps the stream's room for what it holds instead (the stream then
  // refuses new events until the oldest age out, and a later start lowers it further).
  const held = existing.state.bytes;
  if (config.max_bytes < held) {
    options.logger?.warn(
      { stream: config.name, bytes: held, requested: config.max_bytes },
      'usage stream keeps room for the events it holds: a start never lowers max_bytes below them, which would delete the oldest unmetered or not (they age out, or lower it with `nats stream edit`)',
    );
    config.max_bytes = held;
  }
  // Storage cannot change after creation, so the update leaves it out.
  const { storage: _storage, ...updatable } = config;
  return manager.streams.update(config.name, updatable).catch((error: unknown) => {
    throw explainStorage(error, config);
  });
}

/**
 * Servers before 2.10.5 check `discard: new` against an event's payload and headers alone, not the
 * record they store (subject and framing too): a stream within a record of its max_bytes then
 * accepts the event and drops its oldest one to make room, which may not be metered yet.
 */
function warnIfDiscardNewIsInexact(nc: NatsConnection, stream: string, logger: UsageStreamOptions['logger']): void {
  const version = nc.info?.version;
  const [major = 0, minor = 0, patch = 0] = (version ?? '').split(/[.-]/).map(Number);
  if (version === undefined || major > 2 || (major === 2 && (minor > 10 || (minor === 10 && patch >= 5)))) return;
  logger?.warn({ stream, nats_version: version }, 'NATS before 2.10.5 may drop the oldest usage events of a full stream despite discard: new; upgrade NATS');
}

/** JetStream's error when a stream's max_bytes does not fit what the server may still reserve. */
const STORAGE_RESOURCES_EXCEEDED = 10047;

/** Names the variable to change when JetStream refuses the stream's max_bytes; any other error as it is. */
function explainStorage(error: unknown, config: { name: string; max_bytes: number; num_replicas: number }): unknown {
  if ((error as { api_error?: { err_code?: number } }).api_error?.err_code !== STORAGE_RESOURCES_EXCEEDED) return error;
  return new Error(
    `NATS cannot reserve USAGE_STREAM_MAX_BYTES=${config.max_bytes} for the usage stream ${config.name} (on each of its ${config.num_replicas} server(s)): lower it, or raise the servers' max_file_store (${(error as Error).message})`,
    { cause: error },
  );
}

/** Whether a JetStream API error means "stream not found" (code 404 / err_code 10059). */
export function isNotFound(error: unknown): boolean {
  const api = (error as { api_error?: { code?: number; err_code?: number } }).api_error;
  return api?.code === 404 || api?.err_code === 10059 || /not found/i.test((error as Error)?.message ?? '');
}

import { connect, type NatsConnection } from 'nats';
import type { Logger } from '@gateway/logger';
import { type GrpcServed, type GrpcServedOptions, metric, type prometheus, type Served, serviceMetrics, servedGrpc } from '@gateway/observability';

/**
 * What every service's NATS_URL description says of the URL's form, as natsServers reads it: one
 * sentence, appended to the description of what the service uses NATS for.
 */
export const NATS_URL_FORM =
  ' A user and password (nats://user:password@host:4222, percent-encoded) or a token (nats://token@host:4222) authenticate; tls:// connects over TLS (NODE_EXTRA_CA_CERTS adds a private CA).';

/** A NATS_URL's servers, and the user and password its URLs carry, as the client takes them. */
export interface NatsServers {
  servers: string[];
  user?: string;
  pass?: string;
  /** `nats://token@host:4222`: a token alone, as NATS's own clients read such a URL. */
  token?: string;
}

/**
 * The servers of a NATS_URL (one URL, or a cluster's, comma-separated) and the credentials in them
 * (`nats://user:password@host:4222`, percent-encoded): the client takes a user and password as
 * options and refuses them in a server URL, so they are taken out of every URL (and never logged
 * with a server); the first URL that carries them gives them. A user without a password is a token.
 */
export function natsServers(url: string): NatsServers {
  const parsed: NatsServers = { servers: [] };
  for (const entry of url.split(',').map((server) => server.trim())) {
    if (entry.length === 0) continue;
    const [, scheme = '', userinfo, rest = entry] = /^([a-z]+:\/\/)?(?:([^@/]*)@)?(.*)$/i.exec(entry) ?? [];
    parsed.servers.push(`${scheme}${rest}`);
    if (userinfo === undefined || parsed.user !== undefined || parsed.token !== undefined) continue;
    const colon = userinfo.indexOf(':');
    if (colon < 0) parsed.token = decodeURIComponent(userinfo);
    else {
      parsed.user = decodeURIComponent(userinfo.slice(0, colon));
      parsed.pass = decodeURIComponent(userinfo.slice(colon + 1));
    }
  }
  return parsed;
}

/**
 * Connects to NATS and keeps reconnecting forever (also for the first connection), so a NATS
 * restart never needs a service restart. Status changes are logged; the caller owns the
 * connection and drains it on shutdown. A user and password in the URL (each service its own NATS
 * user, docs/deploy-entry.md) authenticate the connection. Given the service's registry, it registers
 * `gateway_nats_connected` on it at once (0 until the first connection), so that every process
 * that speaks NATS says whether it reaches it, whatever it does with the connection.
 */
export function connectNats(url: string, name: string, logger: Logger, registry?: prometheus.Registry): Promise<NatsConnection> {
  const connection = openConnection(url, name, logger);
  if (registry) serviceMetrics(registry, connectionMetrics(followConnection(connection)));
  return connection;
}

/** The metrics of a process's NATS connection, as a table (see serviceMetrics). */
// biome-ignore format: one metric a line, a table of what each reads
function connectionMetrics(state: ConnectionState) {
  return {
    connected: metric.gauge('gateway_nats_connected', 'Whether this process is connected to NATS now (1) or not (0: never yet, reconnecting, closed).', () => (state.connected ? 1 : 0)),
  };
}

async function openConnection(url: string, name: string, logger: Logger): Promise<NatsConnection> {
  const { servers, user, pass, token } = natsServers(url);
  const nc = await connect({
    // A cluster is named by several URLs, comma-separated; the client also learns the others from
    // the server it reaches, and moves to another when it goes away.
    servers,
    ...(user === undefined ? {} : { user, pass }),
    ...(token === undefined ? {} : { token }),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    waitOnFirstConnect: true,
    pingInterval: 20_000,
  });
  logger.info({ server: nc.getServer() }, 'nats connected');
  void (async () => {
    for await (const status of nc.status()) {
      // Pings and staleness are noise; connection changes are what an operator looks for.
      if (status.type === 'pingTimer' || status.type === 'staleConnection') continue;
      const level = status.type === 'disconnect' || status.type === 'error' ? 'warn' : 'info';
      logger[level]({ status: status.type, data: typeof status.data === 'object' ? String(status.data) : status.data }, 'nats status changed');
    }
  })();
  void nc.closed().then((error) => {
    if (error) logger.error({ err: error }, 'nats connection closed with an error');
    else logger.info('nats connection closed');
  });
  return nc;
}

/**
 * Drains a connection (or the promise of one that may never connect) on shutdown, waiting at most
 * timeoutMs: a NATS that is down must not hold a process past its grace period.
 */
export async function drainNats(connection: NatsConnection | Promise<NatsConnection>, timeoutMs = 1_000): Promise<void> {
  await Promise.race([
    Promise.resolve(connection)
      .then((nc) => nc.drain())
      .catch(() => undefined),
    new Promise((resolve) => setTimeout(resolve, timeoutMs).unref()),
  ]);
}

/** A service that answers gRPC and consumes from JetStream (metering, the request log), as its process stops it. */
export interface ConsumingService {
  readonly grpc: { shutdown(graceMs: number): Promise<void> };
  /** Stops consuming once what the consumers hold is done (or handed back). */
  stop(): Promise<void>;
}

/**
 * Stops a consuming service on shutdown in the order that loses nothing: its gRPC server (the calls
 * under way get graceMs), its consumers, the NATS connection (drained, 2 s at most), then the
 * metrics server, so that /metrics answers until the rest is done.
 */
export async function stopConsumingService(service: ConsumingService, nc: NatsConnection, graceMs: number, metrics: { close(): Promise<void> }): Promise<void> {
  await service.grpc.shutdown(graceMs);
  await service.stop();
  await drainNats(nc, 2_000);
  await metrics.close();
}

/** What a consuming service's process serves beside its service: its address, grace, metrics server, readiness and listening line. */
export interface ConsumingServedOptions extends Pick<GrpcServedOptions, 'address' | 'graceMs' | 'ready' | 'listening'> {
  /** Closed last, by the drain (see stopConsumingService). */
  readonly metrics: { close(): Promise<void> };
}

/**
 * What a consuming service serves (metering, the request log): its gRPC server, NOT_SERVING at once
 * on the signal; its consumers started before it listens; drained as stopConsumingService does.
 */
export function servedConsumingService(
  service: ConsumingService & { readonly grpc: GrpcServed; start(): Promise<void> },
  nc: NatsConnection,
  { metrics, ...options }: ConsumingServedOptions,
): Served {
  return {
    ...servedGrpc(service.grpc, { ...options, beforeListen: () => service.start() }),
    // The gRPC server, then the consumers, then NATS, then the metrics server.
    drain: () => stopConsumingService(service, nc, options.graceMs, metrics),
  };
}

/** Whether a process's NATS connection is up now; see followConnection. */
export interface ConnectionState {
  /** True while connected; false before the first connection, while reconnecting, and once closed. */
  readonly connected: boolean;
}

/**
 * Follows a connection (or the promise of one that may not connect yet) and says whether it is up:
 * what a process exports as `gateway_nats_connected`, so that an outage shows on every process that
 * cannot reach NATS, whatever traffic it has (a quiet edge has nothing held to show it otherwise).
 */
export function followConnection(connection: NatsConnection | Promise<NatsConnection>): ConnectionState {
  let connected = false;
  void Promise.resolve(connection).then(
    async (nc) => {
      connected = !nc.isClosed();
      void nc.closed().then(() => {
        connected = false;
      });
      for await (const status of nc.status()) {
        if (status.type === 'disconnect') connected = false;
        else if (status.type === 'reconnect') connected = true;
      }
    },
    () => undefined,
  );
  return {
    get connected() {
      return connected;
    },
  };
}

/**
 * The one start-up and shutdown of every service: a service declares its config loader, its
 * resources (each opened with its close), what it serves and its readiness; the runner parses the
 * config, starts the lifecycle before anything is opened, opens the metrics server when asked,
 * listens, reports ready, and on a signal drains in order (what was opened last closes first).
 */
import type { Logger } from '@gateway/logger';
import { type MetricsServer, startMetricsServer } from './metrics-server.js';
import { type ServiceStart, type ServiceStartConfig, startService } from './service-start.js';
import { describeFailure, type ShutdownOptions } from './shutdown-signal.js';
import { startTracing, type Tracing } from './tracing.js';

/** What a service's `open` is given: the prologue of startService, the config, and its openers. */
export interface RunContext<Config> extends ServiceStart {
  readonly config: Config;
  /** The environment the config was parsed from (what a service reads beyond its schema: the provider key variables). */
  readonly environment: NodeJS.ProcessEnv;
  /** Registers `close` as the resource's stop step (the last opened closes first) and returns it. */
  open<Resource>(resource: Resource, close: (resource: Resource) => unknown): Resource;
  /**
   * Starts the metrics server (/metrics, /healthz, /readyz) on `port`; its /readyz answers 200 once
   * what the service serves listens, until shutdown, while the served `ready` holds. It is not
   * registered for closing: pass it to `open` (or to the drain that closes it). `host` defaults to
   * 0.0.0.0; `ready` replaces that readiness (the edge's metrics port is ready until shutdown, its
   * own /readyz on the API's port says more).
   */
  metrics(port: number, options?: MetricsOptions): Promise<MetricsServer>;
  /** `metrics`, its close registered as the next stop step (so it closes after what opens later). */
  openMetrics(port: number, options?: MetricsOptions): Promise<MetricsServer>;
  /** Starts the service's tracing (off unless configured) and registers its shutdown. */
  tracing(): Tracing;
}

/** Where a metrics server listens and what its /readyz answers (see RunContext.metrics). */
export interface MetricsOptions {
  readonly host?: string;
  readonly ready?: () => boolean;
}

/** What a service serves, returned by its `open` once every resource is there. */
export interface Served {
  /** Starts accepting; resolves to the port it listens on. */
  listen(): Promise<number>;
  /** The first stop step (registered last): no new calls, in-flight ones get the grace. */
  drain(): unknown;
  /** Run at once on the signal, before the delay (a gRPC server's NOT_SERVING). */
  reportNotServing?(): void;
  /** Run after the drain is registered and before listening (consumers started, a registry read). */
  beforeListen?(): Promise<unknown> | unknown;
  /** A readiness check beyond listening and not shutting down (a client's connection up). */
  ready?(): boolean;
  /** The line an operator reads once it listens: its fields and message (none when absent). */
  listening?(port: number): readonly [Record<string, unknown>, string];
}

/** A service as the runner starts it. */
export interface ServiceDefinition<Config extends ServiceStartConfig> {
  /** The service's name: its logger's, its metrics', and the start of its failure line. */
  readonly name: string;
  /** Parses the environment (throwing on an invalid one: the process exits 1 with one JSON line). */
  config(environment: NodeJS.ProcessEnv): Config;
  /** The shutdown delay and grace, read from the config. */
  shutdown(config: Config): ShutdownOptions;
  /** Opens the service's resources, in order, and returns what it serves. */
  open(context: RunContext<Config>): Promise<Served>;
}

/**
 * Runs a service. A config that does not parse writes `<name> failed to start` as one JSON line on
 * stderr (the logger does not exist yet) and exits 1; a resource that fails to open logs the same
 * message, closes what was opened so far (last first) and exits 1. Resolves once it listens.
 */
export async function runService<Config extends ServiceStartConfig>(
  service: ServiceDefinition<Config>,
  environment: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  let config: Config;
  let shutdown: ShutdownOptions;
  try {
    config = service.config(environment);
    shutdown = service.shutdown(config);
  } catch (error) {
    process.stderr.write(
      `${JSON.stringify({ level: 'fatal', service: service.name, msg: `${service.name} failed to start`, error: error instanceof Error ? error.message : String(error) })}\n`,
    );
    process.exit(1);
  }
  const start = startService(service.name, config, shutdown);
  const { lifecycle, logger, registry } = start;
  let listening = false;
  let served: Served | undefined;
  const ready = () => listening && !lifecycle.shuttingDown && (served?.ready?.() ?? true);
  const context: RunContext<Config> = {
    ...start,
    config,
    environment,
    open: (resource, close) => {
      lifecycle.onStop(() => close(resource));
      return resource;
    },
    metrics: (port, options = {}) => startMetricsServer(registry, port, options.host ?? '0.0.0.0', options.ready ?? ready),
    openMetrics: async (port, options) => context.open(await context.metrics(port, options), (server) => server.close()),
    tracing: () => context.open(startTracing(service.name), (tracing) => tracing.shutdown()),
  };
  try {
    served = await service.open(context);
    const { drain, reportNotServing } = served;
    if (reportNotServing) lifecycle.onSignal(() => reportNotServing.call(served));
    lifecycle.onStop(() => drain.call(served));
    await served.beforeListen?.();
    const port = await served.listen();
    listening = true;
    const line = served.listening?.(port);
    if (line) logger.info(line[0], line[1]);
  } catch (error) {
    failedToStart(logger, service.name, error);
    lifecycle.abort('start-up failed');
  }
}

/** A gRPC server as `servedGrpc` serves it (@gateway/grpc's GatewayServer). */
export interface GrpcServed {
  listen(address: string): Promise<number>;
  shutdown(graceMs: number): Promise<unknown>;
  reportNotServing(): void;
}

/** What a gRPC service serves besides its server: its address, grace, and the Served steps it adds. */
export interface GrpcServedOptions extends Pick<Served, 'beforeListen' | 'ready' | 'listening'> {
  readonly address: string;
  /** In-flight calls' budget once the server stops taking new ones (the service's SHUTDOWN_GRACE_MS). */
  readonly graceMs: number;
  /** Run in the drain before the server shuts down. */
  readonly beforeShutdown?: () => unknown;
  /** Run in the drain once the server has shut down. */
  readonly afterShutdown?: () => unknown;
}

/**
 * What a gRPC service serves: NOT_SERVING on grpc.health.v1 at once on the signal (readiness probes
 * ask it), then, after the delay, no new calls and `graceMs` for those in flight.
 */
export function servedGrpc(server: GrpcServed, options: GrpcServedOptions): Served {
  const { address, graceMs, beforeShutdown, afterShutdown, ...served } = options;
  return {
    ...served,
    reportNotServing: () => server.reportNotServing(),
    drain: async () => {
      await beforeShutdown?.();
      await server.shutdown(graceMs);
      await afterShutdown?.();
    },
    listen: () => server.listen(address),
  };
}

function failedToStart(logger: Logger, name: string, error: unknown): void {
  logger.fatal({ err: describeFailure(error) }, `${name} failed to start`);
}

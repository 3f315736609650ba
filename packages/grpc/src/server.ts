import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { GatewayError } from './gateway-error.js';
import { requestIdOf } from './client.js';

/** Where a server reports failures that are not GatewayErrors (bugs): the cause stays here. */
export type ErrorReporter = (error: unknown, method: string, requestId?: string) => void;

/**
 * Anything a handler threw as the GatewayError to send: a GatewayError as it is, anything else (a
 * bug) reported with its cause and sent as a bare INTERNAL.
 */
export function toGatewayError(error: unknown, method: string, report?: ErrorReporter, requestId?: string): GatewayError {
  if (error instanceof GatewayError) return error;
  report?.(error, method, requestId);
  return new GatewayError(grpc.status.INTERNAL, 'internal_error', 'The service failed to handle the request.');
}

/** Converts anything a handler threw into the error object grpc-js sends. */
export function toServiceError(error: unknown, method: string, report?: ErrorReporter, requestId?: string): ReturnType<GatewayError['toServiceError']> {
  return toGatewayError(error, method, report, requestId).toServiceError();
}

/** An async unary handler: return the response or throw. */
export type AsyncUnary<Request, Response> = (request: Request, call: grpc.ServerUnaryCall<Request, Response>) => Promise<Response>;

/** Adapts an async unary handler to grpc-js, converting every thrown error in one place. */
export function unary<Request, Response>(
  handler: AsyncUnary<Request, Response>,
  method: string,
  report?: ErrorReporter,
): grpc.handleUnaryCall<Request, Response> {
  return (call, callback) => {
    handler(call.request, call).then(
      (response) => callback(null, response),
      (error: unknown) => callback(toServiceError(error, method, report, requestIdOf(call))),
    );
  };
}

/** A gRPC server with grpc.health.v1 and a shutdown that lets in-flight calls finish. */
export interface GatewayServer {
  readonly server: grpc.Server;
  readonly health: HealthImplementation;
  /** Binds and starts; resolves with the bound port (useful with port 0). */
  listen(address: string): Promise<number>;
  /**
   * Reports NOT_SERVING on grpc.health.v1 while still serving every call: the first thing a
   * shutdown does, also during the process's shutdown delay (before it stops accepting).
   */
  reportNotServing(): void;
  /**
   * Reports NOT_SERVING, stops taking calls, drains long-lived streams, waits up to graceMs for
   * in-flight calls, then cancels them.
   */
  shutdown(graceMs: number): Promise<void>;
}

/** One service a GatewayServer serves. */
export interface GatewayService {
  /** The fully qualified name, also its grpc.health.v1 name. */
  name: string;
  definition: grpc.ServiceDefinition;
  handlers: grpc.UntypedServiceImplementation;
  /**
   * Asks the callers of the service's long-lived streams to move elsewhere and resolves once those
   * streams have ended; called on shutdown with how long callers get to cooperate. Without it, a
   * stream that never ends would hold the shutdown for its whole grace.
   */
  drain?: (patienceMs: number) => Promise<void>;
}

/** How long callers of long-lived streams get, at most, to half-close them on shutdown. */
const STREAM_DRAIN_PATIENCE_MS = 1_000;

/**
 * Every connection to a server is asked to go away (HTTP/2 GOAWAY) after about this long (grpc-js
 * adds ±10%), so that a client reaching the service through an address that does not change (a
 * Kubernetes ClusterIP, an L4 load balancer) or with a resolver that looks the name up again only
 * when a connection ends (grpc-js's own) reconnects, resolves again, and spreads over replicas
 * added since. The gateway's own clients follow a name's address set sooner (address-resolver.ts);
 * this bounds the rest. Each service sets it with GRPC_MAX_CONNECTION_AGE_MS.
 *
 * A connection asked to go away takes no new call (a stream the client opened before it saw the
 * GOAWAY is refused, never processed, and grpc-js retries a refused unary call on another
 * connection) and carries the calls it has until they end. That holds only with the patch of
 * grpc-js in patches/: unpatched, the keepalive ping of either side, due within 15 to 30 s on the
 * closing connection, fails at once (Node refuses a ping on a closing session) and the connection
 * is destroyed with every call on it.
 */
export const MAX_CONNECTION_AGE_MS = 2 * 60_000;

/**
 * How long a connection asked to go away may still carry the calls it has, after which they are
 * cut: the longest call (a completion streamed for many minutes, a catalog watch renewed every ten)
 * finishes on it, and the gateway's call streams move to a new connection at their own age (at
 * most a few minutes) after answering what they carry (STREAMED_CALLS.md, "Drain and connection
 * age"). Each service sets it with GRPC_MAX_CONNECTION_AGE_GRACE_MS.
 */
export const MAX_CONNECTION_AGE_GRACE_MS = 30 * 60_000;

/** A server's connection age and its grace (see MAX_CONNECTION_AGE_MS), from a service's configuration. */
export interface ConnectionAge {
  maxAgeMs: number;
  graceMs: number;
}

/** A service's connection age, from its GRPC_MAX_CONNECTION_AGE_MS and GRPC_MAX_CONNECTION_AGE_GRACE_MS. */
export function connectionAgeOf(config: { readonly GRPC_MAX_CONNECTION_AGE_MS: number; readonly GRPC_MAX_CONNECTION_AGE_GRACE_MS: number }): ConnectionAge {
  return { maxAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS, graceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS };
}

/** The grpc-js server options of a connection age; none (the defaults) when not given. */
export function connectionAgeOptions(age?: ConnectionAge): grpc.ServerOptions {
  return age ? { 'grpc.max_connection_age_ms': age.maxAgeMs, 'grpc.max_connection_age_grace_ms': age.graceMs } : {};
}

/**
 * Creates an unstarted server that serves the given services and grpc.health.v1, SERVING for ''
 * and for each service name until shutdown.
 */
export function createGatewayServer(services: GatewayService[], options: grpc.ServerOptions = {}): GatewayServer {
  const server = new grpc.Server({
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    'grpc.max_connection_age_ms': MAX_CONNECTION_AGE_MS,
    'grpc.max_connection_age_grace_ms': MAX_CONNECTION_AGE_GRACE_MS,
    ...options,
  });
  const statuses: Record<string, 'SERVING'> = { '': 'SERVING' };
  for (const service of services) {
    server.addService(service.definition, service.handlers);
    statuses[service.name] = 'SERVING';
  }
  const health = new HealthImplementation(statuses);
  health.addToServer(server);
  const reportNotServing = () => {
    for (const name of Object.keys(statuses)) health.setStatus(name, 'NOT_SERVING');
  };
  return {
    server,
    health,
    listen: (address) =>
      new Promise((resolve, reject) => {
        server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port)));
      }),
    reportNotServing,
    shutdown: async (graceMs) => {
      reportNotServing();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        // tryShutdown sends GOAWAY first, so a stream a caller opens to replace a drained one
        // reaches another replica, and lets each connection carry its calls until they end (see
        // MAX_CONNECTION_AGE_MS on keepalive); then the streams are asked to end.
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
        const patienceMs = Math.min(STREAM_DRAIN_PATIENCE_MS, graceMs / 2);
        for (const service of services) void service.drain?.(patienceMs);
      });
    },
  };
}

/**
 * The caller's span as a W3C traceparent, from what a handler gets besides its request: a call on
 * a call stream (its `traceparent` field) or a unary call (its `traceparent` metadata).
 */
export function callTraceparent(context: unknown): string | undefined {
  if (!context || typeof context !== 'object') return undefined;
  if ('traceparent' in context && typeof context.traceparent === 'string') return context.traceparent || undefined;
  if ('metadata' in context && context.metadata instanceof grpc.Metadata) {
    const [value] = context.metadata.get('traceparent');
    return typeof value === 'string' && value ? value : undefined;
  }
  return undefined;
}

/** What a service does around its server's shutdown. */
export interface ShutdownSteps {
  /** Before the drain: ends what never ends on its own (open watch or listen streams). */
  before?: () => void;
  /** After the drain: closes what the calls used (upstream pools, pollers). */
  after?: () => Promise<void> | void;
}

/** The same server, whose shutdown runs the service's own steps around the drain. */
export function withShutdownSteps(server: GatewayServer, steps: ShutdownSteps): GatewayServer {
  return {
    ...server,
    shutdown: async (graceMs) => {
      steps.before?.();
      await server.shutdown(graceMs);
      await steps.after?.();
    },
  };
}

import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { GatewayError } from './gateway-error.js';
import { requestIdOf } from './client.js';

/** Where a server reports failures that are not GatewayErrors (bugs): the cause stays here. */
export type ErrorReporter = (error: unknown, method: string, requestId?: string) => void;

/** Converts anything a handler threw into the error object grpc-js sends. */
export function toServiceError(error: unknown, method: string, report?: ErrorReporter, requestId?: string): ReturnType<GatewayError['toServiceError']> {
  if (error instanceof GatewayError) return error.toServiceError();
  report?.(error, method, requestId);
  return new GatewayError(grpc.status.INTERNAL, 'internal_error', 'The service failed to handle the request.').toServiceError();
}

/** An async unary handler: return the response or throw. */
export type AsyncUnary<Request, Response> = (request: Request, call: grpc.ServerUnaryCall<Request, Response>) => Promise<Response>;

/** Adapts an async unary handler to grpc-js, converting every thrown error in one place. */
export function unary<Request, Response>(handler: AsyncUnary<Request, Response>, method: string, report?: ErrorReporter): grpc.handleUnaryCall<Request, Response> {
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
  /** Reports NOT_SERVING, stops taking calls, waits up to graceMs for in-flight ones, then cancels them. */
  shutdown(graceMs: number): Promise<void>;
}

/**
 * Creates an unstarted server that serves the given services and grpc.health.v1, SERVING for ''
 * and for each service name until shutdown.
 */
export function createGatewayServer(services: Array<{ name: string; definition: grpc.ServiceDefinition; handlers: grpc.UntypedServiceImplementation }>, options: grpc.ServerOptions = {}): GatewayServer {
  const server = new grpc.Server({
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    ...options,
  });
  const statuses: Record<string, 'SERVING'> = { '': 'SERVING' };
  for (const service of services) {
    server.addService(service.definition, service.handlers);
    statuses[service.name] = 'SERVING';
  }
  const health = new HealthImplementation(statuses);
  health.addToServer(server);
  return {
    server,
    health,
    listen: (address) => new Promise((resolve, reject) => {
      server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port)));
    }),
    shutdown: async (graceMs) => {
      for (const name of Object.keys(statuses)) health.setStatus(name, 'NOT_SERVING');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => { server.forceShutdown(); resolve(); }, graceMs);
        timer.unref();
        server.tryShutdown(() => { clearTimeout(timer); resolve(); });
      });
    },
  };
}

import { createGatewayServer, type GatewayServer } from '@gateway/grpc';
import { loadGatewayGrpc } from '@gateway/proto';
import { createAuthService, type AuthServiceDependencies } from './auth-service.js';

/** The fully qualified name the service is registered and health-checked under. */
export const AUTH_SERVICE_NAME = 'gateway.auth.v1.AuthService';

/**
 * Wires the AuthService and grpc.health.v1 into an unstarted server; tests listen on port 0. On
 * shutdown the server drains its Decide streams, so edges move them to another replica.
 */
export function createServer(dependencies: AuthServiceDependencies): GatewayServer {
  const { AuthService } = loadGatewayGrpc().gateway.auth.v1;
  const service = createAuthService(dependencies);
  return createGatewayServer([{ name: AUTH_SERVICE_NAME, definition: AuthService.service, handlers: service.handlers, drain: service.drain }]);
}

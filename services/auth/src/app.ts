import { createGatewayServer, type GatewayServer } from '@gateway/grpc';
import { loadGatewayGrpc } from '@gateway/proto';
import { createAuthHandlers, type AuthServiceDependencies } from './auth-service.js';

/** The fully qualified name the service is registered and health-checked under. */
export const AUTH_SERVICE_NAME = 'gateway.auth.v1.AuthService';

/** Wires the AuthService and grpc.health.v1 into an unstarted server; tests listen on port 0. */
export function createServer(dependencies: AuthServiceDependencies): GatewayServer {
  const { AuthService } = loadGatewayGrpc().gateway.auth.v1;
  return createGatewayServer([{ name: AUTH_SERVICE_NAME, definition: AuthService.service, handlers: createAuthHandlers(dependencies) }]);
}

import { createGatewayServer, type GatewayServer } from '@gateway/grpc';
import { loadGatewayGrpc } from '@gateway/proto';
import { createAuthService, type AuthServiceDependencies } from './auth-service.js';
import { createTeamService } from './team-service.js';
import type { TeamStore } from './team-store.js';

/** The fully qualified name the service is registered and health-checked under. */
export const AUTH_SERVICE_NAME = 'gateway.auth.v1.AuthService';
/** The fully qualified name of the TeamService, served beside it. */
export const TEAM_SERVICE_NAME = 'gateway.auth.v1.TeamService';

/** What the server needs: the AuthService's dependencies and the team store. */
export interface AuthServerDependencies extends AuthServiceDependencies {
  teams: TeamStore;
}

/**
 * Wires the AuthService, the TeamService and grpc.health.v1 into an unstarted server; tests listen on port 0. On
 * shutdown the server drains its Decide streams, so edges move them to another replica.
 */
export function createServer(dependencies: AuthServerDependencies): GatewayServer {
  const { AuthService, TeamService } = loadGatewayGrpc().gateway.auth.v1;
  const service = createAuthService(dependencies);
  const teams = createTeamService({ teams: dependencies.teams, logger: dependencies.logger });
  return createGatewayServer([
    { name: AUTH_SERVICE_NAME, definition: AuthService.service, handlers: service.handlers, drain: service.drain },
    { name: TEAM_SERVICE_NAME, definition: TeamService.service, handlers: teams },
  ]);
}

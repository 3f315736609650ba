import { connectionAgeOptions, createGatewayServer, type ConnectionAge, type GatewayServer } from '@gateway/grpc';
import { loadGatewayGrpc } from '@gateway/proto';
import { createAdminAccessService } from './admin-access/admin-access-service.js';
import type { AdminTokenStore } from './admin-access/admin-token-store.js';
import type { AuditLog } from '@gateway/keyspace';
import { createAuditor } from './audit/auditor.js';
import { createAuthService, type AuthServiceDependencies } from './auth-service.js';
import { createTeamService } from './teams/team-service.js';
import type { TeamStore } from './teams/team-store.js';

/** The fully qualified name the service is registered and health-checked under. */
export const AUTH_SERVICE_NAME = 'gateway.auth.v1.AuthService';
/** The fully qualified name of the admin tokens and audit service. */
export const ADMIN_ACCESS_SERVICE_NAME = 'gateway.auth.v1.AdminAccessService';
/** The fully qualified name of the TeamService, served beside them. */
export const TEAM_SERVICE_NAME = 'gateway.auth.v1.TeamService';

/** What auth's server needs: the AuthService's dependencies, the admin token store, the audit trail and the team store. */
export interface AuthServerDependencies extends Omit<AuthServiceDependencies, 'auditor'> {
  adminTokens: AdminTokenStore;
  audit: AuditLog;
  teams: TeamStore;
  /** The server's connection age and grace (GRPC_MAX_CONNECTION_AGE_MS, ..._GRACE_MS); the defaults of @gateway/grpc when absent. */
  connectionAge?: ConnectionAge;
}

/**
 * Wires the AuthService, the AdminAccessService, the TeamService and grpc.health.v1 into an
 * unstarted server; tests listen on port 0. The AuthService and the AdminAccessService record their
 * changes through one auditor. On shutdown the server drains its Decide streams, so edges move them
 * to another replica.
 */
export function createServer(dependencies: AuthServerDependencies): GatewayServer {
  const { AuthService, AdminAccessService, TeamService } = loadGatewayGrpc().gateway.auth.v1;
  const auditor = createAuditor(dependencies.audit, dependencies.logger, dependencies.registry);
  const service = createAuthService({ ...dependencies, auditor });
  const adminAccess = createAdminAccessService({ ...dependencies, auditor });
  const teams = createTeamService({ teams: dependencies.teams, logger: dependencies.logger, auditor });
  return createGatewayServer(
    [
      { name: AUTH_SERVICE_NAME, definition: AuthService.service, handlers: service.handlers, drain: service.drain },
      { name: ADMIN_ACCESS_SERVICE_NAME, definition: AdminAccessService.service, handlers: adminAccess },
      { name: TEAM_SERVICE_NAME, definition: TeamService.service, handlers: teams },
    ],
    connectionAgeOptions(dependencies.connectionAge),
  );
}

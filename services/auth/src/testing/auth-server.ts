/** A whole auth service for a test file, built as main.ts builds it, on a Redis and key prefix of the file's own. */
import type { GatewayServer } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import type { RedisClient } from '@gateway/redis';
import { AdminTokenStore } from '../admin-access/admin-token-store.js';
import { createServer } from '../app.js';
import { AuditLog } from '@gateway/keyspace';
import { KeyStore } from '../keys/key-store.js';
import { loadPlans } from '../quota/plans.js';
import { QuotaLimiter } from '../quota/quota-limiter.js';
import { TeamStore } from '../teams/team-store.js';

/** A listening auth server (AuthService, TeamService and AdminAccessService on one port) and its key store. */
export interface TestAuthServer {
  readonly server: GatewayServer;
  /** `127.0.0.1:<port>`, for a client. */
  readonly address: string;
  readonly keys: KeyStore;
}

/** Starts an auth server on port 0 with every store on `redis` under `prefix` and the default plans; logs nothing. */
export async function startAuthServer(redis: RedisClient, prefix: string): Promise<TestAuthServer> {
  const plans = loadPlans();
  const keys = new KeyStore(redis, { prefix });
  const server = createServer({
    keys,
    teams: new TeamStore(redis, { prefix }),
    limiter: new QuotaLimiter(redis, plans, { prefix, keys }),
    plans,
    logger: createLogger('auth-test', 'silent'),
    adminTokens: new AdminTokenStore(redis, { prefix }),
    audit: new AuditLog(redis, { prefix }),
  });
  const port = await server.listen('127.0.0.1:0');
  return { server, address: `127.0.0.1:${port}`, keys };
}

/** The cluster the request log's end-to-end tests run against. */
import { randomBytes } from 'node:crypto';
import type { TestDatabase } from '@gateway/testing';
import { startCluster, type Cluster } from './cluster.js';

/**
 * A cluster with the request-log service on `database`, whose log the tests read through the admin
 * API: `adminToken` is the static admin token and admin tokens are on, deployment health goes to
 * a subject of its own (NATS is shared with other clusters), and the log writes its batches every
 * 20 ms; `env` adds to that.
 */
export function startRequestLogCluster(database: TestDatabase, adminToken: string, env: Record<string, string> = {}): Promise<Cluster> {
  return startCluster({
    requestLog: { databaseUrl: database.url },
    env: {
      EDGE_ADMIN_TOKEN: adminToken,
      EDGE_ADMIN_TOKENS_ENABLED: 'true',
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
      REQUEST_LOG_BATCH_DELAY_MS: '20',
      ...env,
    },
  });
}

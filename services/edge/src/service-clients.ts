/**
 * The edge's long-lived channels to the services behind it, each client closed on shutdown; the
 * request log, the MCP service, the guard, the cache and the batch service only when their
 * addresses are configured.
 */
import { createClient } from '@gateway/grpc';
import type { RunContext } from '@gateway/observability';
import { loadGatewayGrpc } from '@gateway/proto';
import type { EdgeConfig } from './config.js';
import type { EdgeDependencies } from './dependencies.js';

/** The gRPC clients among the edge's dependencies. */
export type ServiceClients = Pick<
  EdgeDependencies,
  'auth' | 'adminAccess' | 'teams' | 'router' | 'executor' | 'metering' | 'responseStore' | 'requestLog' | 'mcp' | 'guard' | 'cache' | 'batch'
>;

/** Creates the clients (grpc-js connects on the first call) and registers their close. */
export function openServiceClients({ config, lifecycle }: Pick<RunContext<EdgeConfig>, 'config' | 'lifecycle'>): ServiceClients {
  const grpc = loadGatewayGrpc().gateway;
  const clients: ServiceClients = {
    auth: createClient(grpc.auth.v1.AuthService, config.AUTH_SERVICE_ADDR),
    // Same address and options as auth's client: grpc-js's subchannel pool gives both one connection.
    adminAccess: createClient(grpc.auth.v1.AdminAccessService, config.AUTH_SERVICE_ADDR),
    teams: createClient(grpc.auth.v1.TeamService, config.AUTH_SERVICE_ADDR),
    router: createClient(grpc.router.v1.RouterService, config.ROUTER_SERVICE_ADDR),
    executor: createClient(grpc.executor.v1.ExecutorService, config.EXECUTOR_SERVICE_ADDR),
    metering: createClient(grpc.usage.v1.UsageService, config.METERING_SERVICE_ADDR),
    // Same address and options as metering's client: grpc-js's subchannel pool gives both one connection.
    responseStore: createClient(grpc.responses.v1.ResponseStoreService, config.METERING_SERVICE_ADDR),
    // The request log is optional: without it the admin API answers what metering keeps.
    requestLog: config.REQUEST_LOG_SERVICE_ADDR ? createClient(grpc.request_log.v1.RequestLogService, config.REQUEST_LOG_SERVICE_ADDR) : undefined,
    // The MCP gateway only when an MCP service is configured.
    mcp: config.MCP_SERVICE_ADDR ? createClient(grpc.mcp.v1.McpService, config.MCP_SERVICE_ADDR) : undefined,
    // Guardrails only when a guard service is configured.
    guard: config.GUARD_SERVICE_ADDR ? createClient(grpc.guard.v1.GuardService, config.GUARD_SERVICE_ADDR) : undefined,
    // The response cache only when a cache service is configured.
    cache: config.CACHE_SERVICE_ADDR ? createClient(grpc.cache.v1.CacheService, config.CACHE_SERVICE_ADDR) : undefined,
    // OpenAI's Files and Batch APIs only when a batch service is configured.
    batch: config.BATCH_SERVICE_ADDR ? createClient(grpc.batch.v1.BatchService, config.BATCH_SERVICE_ADDR) : undefined,
  };
  lifecycle.onStop(() => {
    for (const client of Object.values(clients)) client?.close();
  });
  return clients;
}

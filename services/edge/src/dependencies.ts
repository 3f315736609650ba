/**
 * Everything the edge talks to, as one object the app and its routes are built from: a file of its
 * own, so that the routes and the app do not import each other.
 */
import type { Logger } from '@gateway/logger';
import type { prometheus, Tracing } from '@gateway/observability';
import type {
  AdminAccessServiceClient,
  AuthServiceClient,
  ExecutorServiceClient,
  RequestBodies,
  ToolCallEvent,
  RequestLogServiceClient,
  McpServiceClient,
  ResponseStoreServiceClient,
  RouterServiceClient,
  TeamServiceClient,
  UsageEvent,
  UsageServiceClient,
  GuardServiceClient,
  CacheServiceClient,
  BatchServiceClient,
} from '@gateway/proto';
import type { GuardCallCounts } from './guardrails/guard-call-counts.js';
import type { PolicyView } from './guardrails/policy-view.js';
import type { CacheSettingsView } from './cache/cache-settings-view.js';
import type { AuthDecisions } from './clients/auth-decisions.js';
import type { CatalogView } from './catalog-view.js';
import type { EdgeConfig } from './config.js';
import type { ExecutorCalls } from './clients/executor-calls.js';

/** Everything the edge talks to. */
export interface EdgeDependencies {
  config: EdgeConfig;
  logger: Logger;
  registry: prometheus.Registry;
  auth: AuthServiceClient;
  /** auth's AdminAccessService: admin tokens (checked on each admin request) and the audit trail. */
  adminAccess: AdminAccessServiceClient;
  /** auth's TeamService: the admin API's /admin/v1/teams. */
  teams: TeamServiceClient;
  /** Quota decisions and settlements, on long-lived streams to auth. */
  decisions: AuthDecisions;
  router: RouterServiceClient;
  executor: ExecutorServiceClient;
  /** Completions, whole and streamed, on long-lived streams to the executors. */
  completions: ExecutorCalls;
  catalog: CatalogView;
  usage: { publish(event: UsageEvent): void };
  /** The events of requests refused before a model, for the request log (its refused-requests stream); absent without a request log. */
  refusals?: { publish(event: UsageEvent): void };
  /** The bodies of requests whose key or team keeps them, for the request log (its bodies stream); absent without a request log. */
  bodies?: { publish(bodies: RequestBodies): void };
  /** The MCP tool calls answered at /mcp, for the request log (its tool-calls stream); absent without a request log. */
  toolCalls?: { publish(event: ToolCallEvent): void };
  /** Metering's UsageService: usage read back for /v1/usage, the admin API and the console. */
  metering: UsageServiceClient;
  /** The request-log service's RequestLogService (REQUEST_LOG_SERVICE_ADDR); absent when no request log is configured. */
  requestLog?: RequestLogServiceClient;
  /** Metering's ResponseStoreService: stored responses of the Responses API (`store`, `previous_response_id`, GET/DELETE). */
  responseStore: ResponseStoreServiceClient;
  /** The MCP service (MCP_SERVICE_ADDR); absent: no MCP gateway. */
  mcp?: McpServiceClient;
  /** The guard service (GUARD_SERVICE_ADDR): Check on the request path, the policies for /admin/v1/policies; absent: no guardrails. */
  guard?: GuardServiceClient;
  /** The guard's policy attachments, pushed by its WatchPolicies; present with `guard`. */
  policies?: PolicyView;
  /** The edge's counts of its Check calls to the guard (its metrics); present with `guard`. */
  guardCalls?: GuardCallCounts;
  /** The cache service (CACHE_SERVICE_ADDR): Lookup and Store on the request path, /admin/v1/cache; absent: no response cache. */
  cache?: CacheServiceClient;
  /** The cache's settings, pushed by its WatchSettings; present with `cache`. */
  cacheSettings?: CacheSettingsView;
  /** The batch service (BATCH_SERVICE_ADDR): OpenAI's Files and Batch APIs; absent: /v1/files and /v1/batches answer 404. */
  batch?: BatchServiceClient;
  /** True once the edge started up (catalog arrived, dependencies answered once) until it shuts down; never its dependencies' later state. */
  ready(): Promise<boolean>;
  /** Traces (OTLP), when configured; off by default. */
  tracing?: Tracing;
}

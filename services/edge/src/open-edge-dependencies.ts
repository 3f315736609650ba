/**
 * The opening of what the edge talks to, in order, each part with its close (the shape it fills is
 * EdgeDependencies, in dependencies.ts).
 */
import type { RunContext } from '@gateway/observability';
import { createAuthDecisions } from './clients/auth-decisions.js';
import { createExecutorCalls } from './clients/executor-calls.js';
import { openServiceClients } from './service-clients.js';
import { WatchedCatalog } from './catalog-view.js';
import { GuardCallCounts, registerGuardCallMetrics } from './guardrails/guard-call-counts.js';
import { WatchedPolicies } from './guardrails/policy-view.js';
import { WatchedCacheSettings } from './cache/cache-settings-view.js';
import type { EdgeConfig } from './config.js';
import type { EdgeDependencies } from './dependencies.js';
import { startupReadiness } from './startup-readiness.js';
import { openUsagePublishing } from './usage-publishing.js';

/**
 * Opens what the edge talks to: tracing, the channels to the services (with decision streams to
 * auth and call streams to the executors), the router's catalog and the guard's policies watched, NATS for usage events, and
 * the start-up readiness. On shutdown the last opened closes first: the readiness's channels, the
 * publishers (flushed, usage handed over), NATS, the catalog watch, the streams (settlements in
 * flight answered), then the channels.
 */
export function openEdgeDependencies(context: RunContext<EdgeConfig>): EdgeDependencies {
  const { config, logger, registry, lifecycle, open, tracing } = context;
  const tracer = tracing();
  const clients = openServiceClients(context);
  const decisions = createAuthDecisions(clients.auth, { streams: config.EDGE_AUTH_STREAMS, target: config.AUTH_SERVICE_ADDR }, registry, logger);
  const completions = createExecutorCalls(clients.executor, { streams: config.EDGE_EXECUTOR_STREAMS, target: config.EXECUTOR_SERVICE_ADDR }, registry, logger);
  // Settlements still in flight are answered before the streams and the channels close.
  lifecycle.onStop(() => Promise.all([decisions.close(2_000), completions.close(2_000)]));
  const catalog = new WatchedCatalog(clients.router, logger);
  catalog.start();
  open(catalog, (watched) => watched.stop());
  // The policies' attachments, pushed by the guard: which requests need a Check, with no call to decide it.
  const policies = clients.guard ? open(new WatchedPolicies(clients.guard, logger), (watched) => watched.stop()) : undefined;
  policies?.start();
  const guardCalls = clients.guard ? new GuardCallCounts() : undefined;
  if (guardCalls) registerGuardCallMetrics(registry, guardCalls);
  // The cache's settings, pushed by the cache: which requests are cacheable, with no call to decide it.
  const cacheSettings = clients.cache ? open(new WatchedCacheSettings(clients.cache, logger), (watched) => watched.stop()) : undefined;
  cacheSettings?.start();
  const { requestLog, guard, cache, ...services } = clients;
  const publishing = openUsagePublishing(context, clients.metering, requestLog !== undefined);
  const ready = startupReadiness(context, catalog);
  return {
    config,
    logger,
    registry,
    ...services,
    ...(requestLog && { requestLog }),
    ...(guard && policies && guardCalls && { guard, policies, guardCalls }),
    ...(cache && cacheSettings && { cache, cacheSettings }),
    decisions,
    completions,
    catalog,
    ...publishing,
    ready,
    tracing: tracer,
  };
}

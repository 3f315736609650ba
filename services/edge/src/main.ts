/**
 * Runs the edge: reads config, opens long-lived channels to auth (with decision streams on it),
 * router and executor, watches the router's catalog, connects to NATS for usage events, listens,
 * and shuts down gracefully.
 */
import { callUnary, createClient, createHealthClient, isServing } from '@gateway/grpc';
import {
  BodiesPublisher,
  bodiesNames,
  UsagePublisher,
  connectNats,
  drainNats,
  ensureUsageStream,
  followConnection,
  refusedNames,
  usageNames,
} from '@gateway/messaging';
import { runService, startTracing } from '@gateway/observability';
import { loadGatewayGrpc, type RecordUsageEventsRequest, type RecordUsageEventsResponseOutput, type UsageEventOutput } from '@gateway/proto';
import { buildEdgeApp } from './app.js';
import { createAuthDecisions } from './clients/auth-decisions.js';
import { createExecutorCalls } from './clients/executor-calls.js';
import { WatchedCatalog } from './catalog-view.js';
import { WatchedPolicies } from './guardrails/policy-view.js';
import { readEdgeConfig } from './config.js';
import { registerUsagePublisherMetrics } from './usage-metrics.js';
import { ResponsesStore } from './wire/responses-store.js';
import { warmUpTokenizer } from '@gateway/tokens';

// On SIGTERM the edge reports not-ready and serves on for EDGE_SHUTDOWN_DELAY_MS, then stops
// accepting and lets in-flight requests finish; what it opened closes last-opened-first.
await runService({
  name: 'edge',
  config: readEdgeConfig,
  shutdown: (config) => ({ graceMs: config.EDGE_SHUTDOWN_GRACE_MS, delayMs: config.EDGE_SHUTDOWN_DELAY_MS }),
  async open({ config, logger, registry, lifecycle, open, metrics }) {
    // Metrics on a port of their own, never on the public API's; the last to close.
    open(await metrics(config.EDGE_METRICS_PORT, { host: config.EDGE_HOST, ready: () => !lifecycle.shuttingDown }), (server) => server.close());
    const tracing = open(startTracing('edge'), (opened) => opened.shutdown());
    const grpc = loadGatewayGrpc().gateway;

    const auth = createClient(grpc.auth.v1.AuthService, config.AUTH_SERVICE_ADDR);
    // Same address and options as auth's client: grpc-js's subchannel pool gives both one connection.
    const adminAccess = createClient(grpc.auth.v1.AdminAccessService, config.AUTH_SERVICE_ADDR);
    const teams = createClient(grpc.auth.v1.TeamService, config.AUTH_SERVICE_ADDR);
    const decisions = createAuthDecisions(auth, { streams: config.EDGE_AUTH_STREAMS, target: config.AUTH_SERVICE_ADDR }, registry, logger);
    const router = createClient(grpc.router.v1.RouterService, config.ROUTER_SERVICE_ADDR);
    const executor = createClient(grpc.executor.v1.ExecutorService, config.EXECUTOR_SERVICE_ADDR);
    const completions = createExecutorCalls(executor, { streams: config.EDGE_EXECUTOR_STREAMS, target: config.EXECUTOR_SERVICE_ADDR }, registry, logger);
    const metering = createClient(grpc.usage.v1.UsageService, config.METERING_SERVICE_ADDR);
    // Same address and options as metering's client: grpc-js's subchannel pool gives both one connection.
    const responseStore = createClient(grpc.responses.v1.ResponseStoreService, config.METERING_SERVICE_ADDR);
    // The request log is optional: without it the admin API answers what metering keeps.
    const requestLog = config.REQUEST_LOG_SERVICE_ADDR ? createClient(grpc.request_log.v1.RequestLogService, config.REQUEST_LOG_SERVICE_ADDR) : undefined;

    // The MCP gateway only when an MCP service is configured.
    const mcp = config.MCP_SERVICE_ADDR ? createClient(grpc.mcp.v1.McpService, config.MCP_SERVICE_ADDR) : undefined;
    // Guardrails only when a guard service is configured.
    const guard = config.GUARD_SERVICE_ADDR ? createClient(grpc.guard.v1.GuardService, config.GUARD_SERVICE_ADDR) : undefined;
    lifecycle.onStop(() => {
      for (const client of [
        auth,
        adminAccess,
        teams,
        router,
        executor,
        metering,
        responseStore,
        ...(requestLog ? [requestLog] : []),
        ...(mcp ? [mcp] : []),
        ...(guard ? [guard] : []),
      ])
        client.close();
    });
    // Settlements still in flight are answered before the streams and the channels close.
    lifecycle.onStop(() => Promise.all([decisions.close(2_000), completions.close(2_000)]));

    const catalog = new WatchedCatalog(router, logger);
    catalog.start();
    open(catalog, (watched) => watched.stop());
    // The policies' attachments, pushed by the guard: which requests need a Check, with no call to decide it.
    const policies = guard ? open(new WatchedPolicies(guard, logger), (watched) => watched.stop()) : undefined;
    policies?.start();

    // NATS is not awaited: the edge serves while NATS is unreachable, and usage events queue until
    // the first connection (then the stream is made sure of, so events never wait on metering).
    const nats = open(connectNats(config.NATS_URL, 'edge', logger, registry), (connection) => drainNats(connection, 2_000));
    const usageStream = usageNames(config.USAGE_STREAM);
    void nats
      .then((connection) =>
        ensureUsageStream(connection, {
          ...usageStream,
          replicas: config.USAGE_STREAM_REPLICAS,
          maxAgeMs: config.USAGE_STREAM_MAX_AGE_HOURS * 3_600_000,
          maxBytes: config.USAGE_STREAM_MAX_BYTES,
          logger,
        }),
      )
      .catch((error: unknown) => logger.warn({ err: error }, 'usage stream not ensured'));
    /** Meters usage events through metering directly: for the events NATS does not take (USAGE_DELIVERY.md). */
    const recordUsage = async (events: UsageEventOutput[], timeoutMs: number) => {
      await callUnary<RecordUsageEventsRequest, RecordUsageEventsResponseOutput>(metering, metering.RecordUsageEvents, { events }, { deadlineMs: timeoutMs });
    };
    const usage = new UsagePublisher(nats, logger, {
      subject: usageStream.subject,
      maxQueue: config.EDGE_USAGE_QUEUE_MAX_EVENTS,
      handOverTo: recordUsage,
      handOverAfterMs: config.EDGE_USAGE_HANDOVER_AFTER_MS,
    });
    const natsState = followConnection(nats);
    registerUsagePublisherMetrics(registry, usage);
    // Requests refused before a model (rate limits, budgets, allow-lists), for the request log only:
    // published only when there is one, on a stream of their own that it creates (never the usage
    // stream); bounded, never handed over, dropped when NATS cannot take them.
    const refusals = requestLog ? new UsagePublisher(nats, logger, { subject: refusedNames(config.USAGE_STREAM).subject, maxQueue: 10_000 }) : undefined;
    // The bodies of requests whose key or team keeps them, likewise: only with a request log, on a
    // bounded stream of their own that it creates, sent after the answer and dropped rather than held.
    const bodies = requestLog
      ? new BodiesPublisher(nats, logger, { subject: bodiesNames(config.USAGE_STREAM).subject, maxPendingBytes: config.REQUEST_LOG_BODY_BUFFER_BYTES })
      : undefined;
    lifecycle.onStop(async () => {
      // Disconnected, nothing can be acknowledged: no wait, what is held goes to metering at once.
      await usage.flush(natsState.connected ? 5_000 : 0);
      // What NATS did not take (it is unreachable) goes to metering, which meters each event once by its
      // id: a rollout during an outage loses no usage.
      const held = usage.pending;
      const handed = await usage.handOver(recordUsage, 5_000);
      if (held > 0 || handed > 0)
        logger[handed >= held ? 'warn' : 'error']({ pending: held, handed_over: handed }, 'usage events NATS did not take were handed to metering at shutdown');
      await refusals?.flush(natsState.connected ? 1_000 : 0);
      refusals?.close();
      await bodies?.flush(natsState.connected ? 1_000 : 0);
    });

    // Ready is the edge's own state: it started up (the catalog arrived, and auth, the router and the
    // executors answered once, so that its first requests do not meet channels still connecting) and
    // is not shutting down. After start-up an outage behind it is answered with 503s and Retry-After,
    // never by leaving the Service: a short auth outage would otherwise take every edge out at once.
    let startup: { at: number; done: boolean } = { at: 0, done: false };
    let health: Array<ReturnType<typeof createHealthClient>> = [config.AUTH_SERVICE_ADDR, config.ROUTER_SERVICE_ADDR, config.EXECUTOR_SERVICE_ADDR].map(
      (address) => createHealthClient(address),
    );
    async function ready(): Promise<boolean> {
      if (lifecycle.shuttingDown) return false;
      if (startup.done || Date.now() - startup.at < 1000) return startup.done;
      const answers = await Promise.all(health.map((client) => isServing(client, '', 1000)));
      startup = { at: Date.now(), done: catalog.ready && answers.every(Boolean) };
      if (startup.done) {
        for (const client of health) client.close();
        health = [];
      }
      return startup.done;
    }
    lifecycle.onStop(() => {
      for (const client of health) client.close();
    });

    warmUpTokenizer();
    const deps = {
      config,
      logger,
      registry,
      auth,
      adminAccess,
      teams,
      decisions,
      router,
      executor,
      completions,
      catalog,
      usage,
      ...(refusals && { refusals }),
      ...(bodies && { bodies }),
      metering,
      responseStore,
      ...(requestLog && { requestLog }),
      mcp,
      ...(guard && policies && { guard, policies }),
      ready,
      tracing,
    };
    // With EDGE_ADMIN_PORT the admin API and the console listen apart from the public API (which
    // answers 404 for them); without it, one app serves everything on EDGE_PORT.
    const app = await buildEdgeApp(deps, { surface: config.EDGE_ADMIN_PORT ? 'public' : 'both' });
    const admin = config.EDGE_ADMIN_PORT ? await buildEdgeApp(deps, { surface: 'admin' }) : undefined;
    return {
      drain: async () => {
        // fastify answers new requests 503 and lets in-flight ones finish.
        await Promise.all([app.close(), admin?.close()]);
        // Responses answered with `store: true` whose put is still on its way are kept before the channel closes.
        const unstored = await ResponsesStore.of(deps).flush(2_000);
        if (unstored > 0) logger.warn({ unstored }, 'responses still being stored at shutdown were given up');
      },
      listen: async () => {
        await app.listen({ host: config.EDGE_HOST, port: config.EDGE_PORT });
        await admin?.listen({ host: config.EDGE_HOST, port: config.EDGE_ADMIN_PORT });
        return config.EDGE_PORT;
      },
    };
  },
});

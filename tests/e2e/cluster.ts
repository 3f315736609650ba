/**
 * Starts the five services as separate processes on free ports against the real Redis and NATS,
 * the way the start command does, and stops them again. Used by the end-to-end tests and the
 * benchmarks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bodiesNames, refusedNames, toolCallNames } from '@gateway/messaging';
import { connectRedis } from '@gateway/redis';
import { connect } from 'nats';
import {
  createTestDatabase,
  eventually,
  freePort,
  natsServers,
  natsUrl,
  type RedisServer,
  redisUrl,
  startRedisServer,
  type TestDatabase,
} from '@gateway/testing';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CORE_SERVICES = ['auth', 'router', 'executor', 'metering', 'edge'] as const;
/**
 * The name of one of the five services, or of an optional one (ClusterOptions.requestLog,
 * ClusterOptions.mcp, ClusterOptions.guard, ClusterOptions.cache, ClusterOptions.batch).
 */
export type ServiceName = (typeof CORE_SERVICES)[number] | 'request-log' | 'mcp' | 'guard' | 'cache' | 'batch';

/** A running cluster. */
export interface Cluster {
  baseUrl: string;
  apiKey: string;
  redisUrl: string;
  /** auth's AUTH_REDIS_PREFIX (auth's default, `auth:`, unless the test chose one), which metering settles under too. */
  authPrefix: string;
  natsUrl: string;
  /** The cluster's own usage stream (USAGE_STREAM). */
  usageStream: string;
  ports: Record<string, number>;
  /** The environment every service of the cluster runs with: what a replica added beside them takes. */
  env: Record<string, string>;
  /** What each service printed, for failure reports. */
  logs: Record<ServiceName, string[]>;
  processes: Record<ServiceName, ChildProcess>;
  /** With ClusterOptions.cache: the URL of the cache's entries' Redis (CACHE_REDIS_URL), the cluster's own. */
  cacheRedisUrl?: string;
  /**
   * With ClusterOptions.cache: that Redis, to take away and bring back in an outage drill (`stop`
   * kills it, `start` starts it again on the same port, empty). cluster.stop() removes it.
   */
  cacheRedis?: { stop(): Promise<void>; start(): Promise<void> };
  /** With ClusterOptions.batch: the batch service's PostgreSQL database (its DATABASE_URL). */
  batchDatabaseUrl?: string;
  /**
   * With ClusterOptions.batch and no databaseUrl: the test database created for it (to take away
   * and bring back with setReachable), dropped by cluster.stop().
   */
  batchDatabase?: TestDatabase;
  /** Starts a service again (after a test killed it) with the same environment. */
  restart(name: ServiceName): void;
  stop(): Promise<void>;
}

export { freePort } from '@gateway/testing';

/** A random key in the gateway's format. */
export function randomApiKey(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  return `br-${Array.from(randomBytes(40), (byte) => alphabet[byte % alphabet.length]).join('')}`;
}

/**
 * An AUTH_REDIS_PREFIX of a cluster's own (`auth:e2e-<hex>:`): its keys, teams and audit trail
 * apart from every other cluster's on the shared Redis, so that listing them lists its own only.
 */
export function ownAuthPrefix(): string {
  return `auth:e2e-${randomBytes(4).toString('hex')}:`;
}

/** Options of a test cluster. */
export interface ClusterOptions {
  plan?: 'starter' | 'pro' | 'enterprise';
  env?: Record<string, string>;
  /** Extra node flags per service (profiling in benchmarks). */
  nodeArgs?: Partial<Record<ServiceName, string[]>>;
  /**
   * Starts the request-log service too, writing to this PostgreSQL database (a test's own, from
   * createTestDatabase), and points the edge at it (REQUEST_LOG_SERVICE_ADDR).
   */
  requestLog?: { databaseUrl: string };
  /**
   * Also start the MCP service (the edge's /mcp and /admin/v1/mcp-servers), with a Redis prefix and
   * a secrets key of the cluster's own.
   */
  mcp?: boolean;
  /**
   * Also start the guard service (guardrail policies; the edge's /admin/v1/policies), with a Redis
   * prefix and a secrets key of its own and a 100 ms reload.
   */
  guard?: boolean;
  /**
   * Also start the cache service (the response cache; the edge's /admin/v1/cache), with a Redis
   * prefix of its own on the cluster's Redis (its settings and purges), auth's audit prefix, a
   * 100 ms reload, and its entries in a Redis server of the cluster's own (64 MB, allkeys-lru, as
   * the cache requires), started here and stopped with the cluster (Cluster.cacheRedis).
   */
  cache?: boolean;
  /**
   * Also start the batch service (the edge's /v1/files and /v1/batches, BATCH_SERVICE_ADDR), its
   * lanes sending each line to this cluster's edge (BATCH_EDGE_URL) every 50 ms at most
   * (BATCH_POLL_INTERVAL_MS), with a secrets key of its own, on this PostgreSQL database
   * (databaseUrl) or else on a test database created here (createTestDatabase) and dropped with the
   * cluster (Cluster.batchDatabase). Its DATABASE_URL is its own: beside `requestLog`, each keeps
   * its database.
   */
  batch?: boolean | { databaseUrl?: string };
  /**
   * With `mcp`: per-key OAuth for `auth: oauth` upstream servers, tokens sealed under a key of the
   * cluster's own (MCP_CREDENTIALS_KEY) and the callback at this cluster's edge
   * (MCP_OAUTH_REDIRECT_URL).
   */
  mcpOAuth?: boolean;
  /**
   * The checkout whose built services run (its `services/<name>/dist/main.js`): another build of
   * the gateway, such as an earlier commit's a benchmark measures beside this one. This one's by
   * default.
   */
  root?: string;
}

/** Starts the cluster and resolves once every service's /readyz is green. */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  // freePort's ports are reserved machine-wide among the processes that take them through it; a
  // program that takes none (anything else on the machine) can still bind one before the service
  // does: that start is thrown away and the cluster started again on other ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOnce(options);
    } catch (error) {
      if (attempt === 5 || !/EADDRINUSE/.test(String((error as Error).message))) throw error;
    }
  }
}

async function startClusterOnce(options: ClusterOptions): Promise<Cluster> {
  // options.env may name a Redis and NATS of the caller's own.
  const [redis, nats] = await Promise.all([options.env?.REDIS_URL ?? redisUrl(), natsUrl()]);
  const services: ServiceName[] = [
    ...CORE_SERVICES.slice(0, 4),
    ...(options.mcp ? (['mcp'] as const) : []),
    ...(options.guard ? (['guard'] as const) : []),
    ...(options.cache ? (['cache'] as const) : []),
    ...(options.requestLog ? (['request-log'] as const) : []),
    ...(options.batch ? (['batch'] as const) : []),
    'edge',
  ];
  const names = [
    'auth',
    'router',
    'executor',
    'metering',
    'edge',
    'edgeMetrics',
    'authMetrics',
    'routerMetrics',
    'executorMetrics',
    'meteringMetrics',
    ...(options.requestLog ? ['requestLog', 'requestLogMetrics'] : []),
    'mcp',
    'mcpMetrics',
    'guard',
    'guardMetrics',
    'cache',
    'cacheMetrics',
    ...(options.batch ? ['batch', 'batchMetrics'] : []),
  ];
  const ports = Object.fromEntries(await Promise.all(names.map(async (name) => [name, await freePort()] as const)));
  // The cache's entries in a Redis of their own, bounded and evicting: never the shared Redis,
  // whose policy must not evict, and apart from other clusters' entries.
  const cacheRedis: RedisServer | undefined = options.cache ? await startRedisServer(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']) : undefined;
  // The batch service's database: the caller's, or a test database of the cluster's own.
  const batchOption = typeof options.batch === 'object' ? options.batch : {};
  const batchDatabase: TestDatabase | undefined = options.batch && !batchOption.databaseUrl ? await createTestDatabase('batch_test') : undefined;
  const batchDatabaseUrl = options.batch ? (batchOption.databaseUrl ?? batchDatabase!.url) : undefined;
  const apiKey = randomApiKey();
  const authPrefix = options.env?.AUTH_REDIS_PREFIX ?? 'auth:';
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    LOG_LEVEL: 'warn',
    REDIS_URL: redis,
    NATS_URL: nats,
    AUTH_LISTEN_ADDR: `127.0.0.1:${ports.auth}`,
    AUTH_METRICS_PORT: String(ports.authMetrics),
    ROUTER_LISTEN_ADDR: `127.0.0.1:${ports.router}`,
    ROUTER_METRICS_PORT: String(ports.routerMetrics),
    EXECUTOR_LISTEN_ADDR: `127.0.0.1:${ports.executor}`,
    EXECUTOR_METRICS_PORT: String(ports.executorMetrics),
    METERING_LISTEN_ADDR: `127.0.0.1:${ports.metering}`,
    METERING_METRICS_PORT: String(ports.meteringMetrics),
    EDGE_HOST: '127.0.0.1',
    EDGE_PORT: String(ports.edge),
    EDGE_METRICS_PORT: String(ports.edgeMetrics),
    AUTH_SERVICE_ADDR: `127.0.0.1:${ports.auth}`,
    ROUTER_SERVICE_ADDR: `127.0.0.1:${ports.router}`,
    EXECUTOR_SERVICE_ADDR: `127.0.0.1:${ports.executor}`,
    METERING_SERVICE_ADDR: `127.0.0.1:${ports.metering}`,
    GATEWAY_BOOTSTRAP_KEY: apiKey,
    GATEWAY_BOOTSTRAP_PLAN: options.plan ?? 'enterprise',
    // A usage stream of its own: clusters that share this NATS (tests run side by side, a benchmark
    // beside the tests) never meter each other's events.
    USAGE_STREAM: `USAGE_E2E_${randomBytes(4).toString('hex').toUpperCase()}`,
    // NATS reserves each stream's max_bytes from its max_file_store: clusters side by side on one
    // development NATS take 256 MiB each (about 900,000 events), not the 1 GiB default. A benchmark
    // that publishes more passes its own.
    USAGE_STREAM_MAX_BYTES: String(256 * 1024 * 1024),
    ...(options.requestLog && {
      DATABASE_URL: options.requestLog.databaseUrl,
      REQUEST_LOG_LISTEN_ADDR: `127.0.0.1:${ports.requestLog}`,
      REQUEST_LOG_METRICS_PORT: String(ports.requestLogMetrics),
      REQUEST_LOG_SERVICE_ADDR: `127.0.0.1:${ports.requestLog}`,
      // NATS reserves the bodies stream's max_bytes too: a small one per cluster.
      REQUEST_LOG_BODY_STREAM_MAX_BYTES: String(16 * 1024 * 1024),
    }),
    ...(options.mcp
      ? {
          MCP_LISTEN_ADDR: `127.0.0.1:${ports.mcp}`,
          MCP_METRICS_PORT: String(ports.mcpMetrics),
          MCP_SERVICE_ADDR: `127.0.0.1:${ports.mcp}`,
          // The cluster's own upstream servers and sessions, apart from other clusters on this Redis.
          MCP_REDIS_PREFIX: `mcp:e2e-${randomBytes(4).toString('hex')}:`,
          MCP_SECRETS_KEY: randomBytes(32).toString('base64'),
          ...(options.mcpOAuth && {
            MCP_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
            MCP_OAUTH_REDIRECT_URL: `http://127.0.0.1:${ports.edge}/mcp/oauth/callback`,
          }),
        }
      : {}),
    ...(options.guard && {
      GUARD_LISTEN_ADDR: `127.0.0.1:${ports.guard}`,
      GUARD_METRICS_PORT: String(ports.guardMetrics),
      GUARD_SERVICE_ADDR: `127.0.0.1:${ports.guard}`,
      // The cluster's own policies, apart from other clusters on this Redis.
      GUARD_REDIS_PREFIX: `guard:e2e-${randomBytes(4).toString('hex')}:`,
      GUARD_SECRETS_KEY: randomBytes(32).toString('base64'),
      GUARD_RELOAD_INTERVAL_MS: '100',
      GUARD_AUDIT_PREFIX: authPrefix,
    }),
    ...(cacheRedis && {
      CACHE_LISTEN_ADDR: `127.0.0.1:${ports.cache}`,
      CACHE_METRICS_PORT: String(ports.cacheMetrics),
      CACHE_SERVICE_ADDR: `127.0.0.1:${ports.cache}`,
      CACHE_REDIS_URL: cacheRedis.url,
      // The cluster's own settings and purges on the shared Redis, apart from other clusters'; its
      // changes go to the audit trail of the cluster's auth (its prefix, auth's default unless the
      // test gives one), where /admin/v1/audit reads them.
      CACHE_REDIS_PREFIX: `cache:e2e-${randomBytes(4).toString('hex')}:`,
      CACHE_AUDIT_PREFIX: authPrefix,
      CACHE_RELOAD_INTERVAL_MS: '100',
    }),
    ...(options.batch && {
      BATCH_LISTEN_ADDR: `127.0.0.1:${ports.batch}`,
      BATCH_METRICS_PORT: String(ports.batchMetrics),
      BATCH_SERVICE_ADDR: `127.0.0.1:${ports.batch}`,
      BATCH_EDGE_URL: `http://127.0.0.1:${ports.edge}`,
      BATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      BATCH_POLL_INTERVAL_MS: '50',
    }),
    ...options.env,
  };
  /** What one service runs with beyond `env`: the batch service's DATABASE_URL, which the request log's may differ from. */
  const serviceEnv: Partial<Record<ServiceName, Record<string, string>>> = {
    ...(batchDatabaseUrl && { batch: { DATABASE_URL: batchDatabaseUrl } }),
  };
  const logs = Object.fromEntries([...CORE_SERVICES, 'mcp', 'guard', 'cache', 'request-log', 'batch'].map((name) => [name, [] as string[]])) as Record<
    ServiceName,
    string[]
  >;
  const processes = {} as Record<ServiceName, ChildProcess>;
  const launch = (name: ServiceName) => {
    const child = spawn(process.execPath, [...(options.nodeArgs?.[name] ?? []), `services/${name}/dist/main.js`], {
      cwd: options.root ?? ROOT,
      env: { ...env, ...serviceEnv[name] },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (data: Buffer) => {
      logs[name].push(data.toString());
      if (logs[name].length > 200) logs[name].shift();
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    processes[name] = child;
  };
  for (const name of services) launch(name);
  const cluster: Cluster = {
    baseUrl: `http://127.0.0.1:${ports.edge}/v1`,
    apiKey,
    redisUrl: redis,
    authPrefix,
    // options.env may name a NATS of the test's own: what a replica added beside the cluster joins.
    natsUrl: env.NATS_URL!,
    usageStream: env.USAGE_STREAM!,
    ports,
    env,
    logs,
    processes,
    ...(cacheRedis && {
      cacheRedisUrl: cacheRedis.url,
      cacheRedis: { stop: () => cacheRedis.pause(), start: () => cacheRedis.resume() },
    }),
    ...(batchDatabaseUrl && { batchDatabaseUrl }),
    ...(batchDatabase && { batchDatabase }),
    restart: launch,
    stop: async () => {
      await Promise.all(services.map((name) => stopProcess(processes[name])));
      await cacheRedis?.stop();
      await batchDatabase?.drop();
      await deleteStream(env.NATS_URL!, env.USAGE_STREAM!);
      // The request log's streams beside it (refusals, bodies, tool calls), each of which NATS reserves room for.
      if (options.requestLog)
        for (const names of [bodiesNames, refusedNames, toolCallNames]) await deleteStream(env.NATS_URL!, names(env.USAGE_STREAM!).stream);
      // Metering's de-duplication records of that stream go with it.
      const client = connectRedis(redis, { maxRetriesPerRequest: 1 });
      const keyId = await client.hget(`${authPrefix}key:${createHash('sha256').update(apiKey).digest('hex')}`, 'key_id').catch(() => null);
      if (keyId) await client.del(`metering:dedup:{${keyId}}:${env.USAGE_STREAM}`).catch(() => undefined);
      client.disconnect();
    },
  };
  try {
    // The edge's readiness is its own; each service reports its own on its metrics port.
    const readiness = [
      `http://127.0.0.1:${ports.edge}/readyz`,
      ...[
        'authMetrics',
        'routerMetrics',
        'executorMetrics',
        'meteringMetrics',
        ...(options.mcp ? ['mcpMetrics'] : []),
        ...(options.guard ? ['guardMetrics'] : []),
        ...(options.cache ? ['cacheMetrics'] : []),
        ...(options.requestLog ? ['requestLogMetrics'] : []),
        ...(options.batch ? ['batchMetrics'] : []),
      ].map((port) => `http://127.0.0.1:${ports[port]}/readyz`),
    ];
    // A bound for a cluster that never gets ready, generous for a machine loaded by a test run
    // beside this one (within the e2e project's 180 s hooks).
    await waitReady(readiness, processes, logs, 150_000);
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

/** Another edge beside a running cluster, sharing its auth, router, executors, metering and usage stream. */
export async function startSecondEdge(
  cluster: Cluster,
  env: Record<string, string> = {},
): Promise<{ origin: string; baseUrl: string; pid: number; stop(): Promise<void>; running(): boolean }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['services/edge/dist/main.js'], {
    cwd: ROOT,
    stdio: 'ignore',
    env: {
      ...(process.env as Record<string, string>),
      LOG_LEVEL: 'warn',
      NATS_URL: cluster.natsUrl,
      USAGE_STREAM: cluster.usageStream,
      USAGE_STREAM_MAX_BYTES: cluster.env.USAGE_STREAM_MAX_BYTES!,
      EDGE_HOST: '127.0.0.1',
      EDGE_PORT: String(port),
      EDGE_METRICS_PORT: '0',
      AUTH_SERVICE_ADDR: `127.0.0.1:${cluster.ports.auth}`,
      ROUTER_SERVICE_ADDR: `127.0.0.1:${cluster.ports.router}`,
      EXECUTOR_SERVICE_ADDR: `127.0.0.1:${cluster.ports.executor}`,
      METERING_SERVICE_ADDR: `127.0.0.1:${cluster.ports.metering}`,
      ...(cluster.env.MCP_SERVICE_ADDR ? { MCP_SERVICE_ADDR: cluster.env.MCP_SERVICE_ADDR } : {}),
      ...(cluster.env.GUARD_SERVICE_ADDR ? { GUARD_SERVICE_ADDR: cluster.env.GUARD_SERVICE_ADDR } : {}),
      ...(cluster.env.CACHE_SERVICE_ADDR ? { CACHE_SERVICE_ADDR: cluster.env.CACHE_SERVICE_ADDR } : {}),
      ...env,
    },
  });
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (
    (await fetch(`${origin}/readyz`).then(
      (response) => response.status,
      () => 0,
    )) !== 200
  ) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('the second edge did not become ready');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    origin,
    baseUrl: `${origin}/v1`,
    pid: child.pid!,
    stop: () => stopProcess(child),
    running: () => child.exitCode === null && child.signalCode === null,
  };
}

/** A second auth replica beside a running cluster. */
export interface SecondAuth {
  readonly process: ChildProcess;
  /** Its gRPC port, for an edge's AUTH_SERVICE_ADDR. */
  readonly port: number;
  readonly metricsPort: number;
  /** What it printed, for failure reports. */
  readonly logs: string[];
}

/** Another auth replica on the cluster's Redis, resolved once its /readyz is green: key changes reach it through Redis alone. */
export async function startSecondAuth(cluster: Cluster): Promise<SecondAuth> {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const logs: string[] = [];
  const child = spawn(process.execPath, ['services/auth/dist/main.js'], {
    cwd: ROOT,
    env: { ...cluster.env, AUTH_LISTEN_ADDR: `127.0.0.1:${port}`, AUTH_METRICS_PORT: String(metricsPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (data: Buffer) => logs.push(data.toString()));
  child.stderr!.on('data', (data: Buffer) => logs.push(data.toString()));
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`the second auth exited:\n${logs.join('')}`);
      return (await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined))?.status === 200 || undefined;
    },
    'the second auth to be ready',
    30_000,
    100,
  );
  return { process: child, port, metricsPort, logs };
}

/**
 * Creates an admin token of `role` named `name` through the admin API at `origin` (the cluster
 * started with EDGE_ADMIN_TOKENS_ENABLED), as the holder of `adminToken`; resolves its secret.
 */
export async function createAdminToken(origin: string, adminToken: string, role: 'admin' | 'viewer', name: string): Promise<string> {
  const created = await fetch(`${origin}/admin/v1/admin-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ role, name }),
  });
  if (created.status !== 201) throw new Error(`creating the admin token ${name}: ${created.status} ${await created.text()}`);
  return ((await created.json()) as { secret: string }).secret;
}

/** Deletes a cluster's usage stream once it is stopped, so test runs leave no streams behind. */
async function deleteStream(url: string, stream: string): Promise<void> {
  const connection = await connect({ servers: natsServers(url), timeout: 2_000 }).catch(() => undefined);
  if (!connection) return;
  try {
    // Best effort, asked again a few times: on a loaded machine (a NATS cluster that just lost a node,
    // a test run beside) JetStream's API can time out, and a stop must not fail the test for it.
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const answered = await connection
        .jetstreamManager({ timeout: 10_000 })
        .then((manager) => manager.streams.delete(stream))
        .then(
          () => true,
          (error: Error) => /stream not found/i.test(error.message),
        );
      if (answered) break;
    }
  } finally {
    await connection.close();
  }
}

async function waitReady(
  urls: readonly string[],
  processes: Record<ServiceName, ChildProcess>,
  logs: Record<ServiceName, string[]>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const name of Object.keys(processes) as ServiceName[]) {
      if (processes[name].exitCode !== null) throw new Error(`${name} exited with ${processes[name].exitCode}:\n${logs[name].join('')}`);
    }
    const statuses = await Promise.all(
      urls.map((url) =>
        fetch(url).then(
          (response) => response.status,
          () => 0,
        ),
      ),
    );
    if (statuses.every((status) => status === 200)) return;
    if (Date.now() > deadline)
      throw new Error(
        `the cluster was not ready within ${timeoutMs} ms (${urls.map((url, index) => `${url}: ${statuses[index] || 'no answer'}`).join(', ')}):\n${(Object.keys(processes) as ServiceName[]).map((name) => `--- ${name}\n${logs[name].join('')}`).join('\n')}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Sends SIGTERM and waits for the exit; SIGKILL after 10 s. */
export function stopProcess(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** A simulated economy chat model `id`, answering after `timeToFirstTokenMs` (5 unless given), as a catalog YAML entry. */
export function simulatedEntry(id: string, options: { timeToFirstTokenMs?: number } = {}): string {
  return `  - id: ${id}
    provider: simulated
    owned_by: gateway
    created: 1735689600
    upstream: { model: ${id} }
    pricing: { input: "0.10", output: "0.40" }
    context_window: 32768
    max_output_tokens: 4096
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: economy
    simulation: { time_to_first_token_ms: ${options.timeToFirstTokenMs ?? 5}, tokens_per_second: 0 }`;
}

/** The simulated economy model most test catalogs include, as a catalog YAML entry. */
export const SIM_MINI_ENTRY = simulatedEntry('sim-mini');

/**
 * An openai-compatible model (`fake-model` unless named) served at baseUrl (a fake upstream of the
 * test), with the key in keyVariable, falling back to `fallbacks` (sim-mini unless given) in the catalog's chain; as a
 * catalog YAML entry, priced at `pricing` (the catalog's fields, USD per million tokens).
 */
export function fakeModelEntry(
  baseUrl: string,
  keyVariable: string,
  id = 'fake-model',
  fallbacks: readonly string[] = ['sim-mini'],
  pricing = 'input: "0.15", output: "0.60"',
): string {
  return `  - id: ${id}
    provider: openai-compatible
    owned_by: tests
    created: 1735689600
    upstream: { model: gpt-4o-mini, base_url: "${baseUrl}", api_key_env: ${keyVariable} }
    pricing: { ${pricing} }
    context_window: 128000
    max_output_tokens: 16384
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: standard${
      fallbacks.length > 0
        ? `
    fallbacks: [${fallbacks.join(', ')}]`
        : ''
    }`;
}

/** How an OpenAI embedding model of a test catalog is served and priced. */
export interface EmbeddingEntryOptions {
  /** USD per million input tokens, as the catalog writes it. */
  readonly inputPrice: string;
  readonly dimensions: number;
  /** The most inputs one upstream call takes, when less than OpenAI's. */
  readonly batchSize?: number;
}

/**
 * OpenAI's text-embedding-3-small as model `id`, served at baseUrl (a fake upstream of the test)
 * with the key in keyVariable, shortenable from `dimensions`; as a catalog YAML entry.
 */
export function openAiEmbeddingEntry(id: string, baseUrl: string, keyVariable: string, options: EmbeddingEntryOptions): string {
  const batch = options.batchSize === undefined ? '' : `, batch_size: ${options.batchSize}`;
  return `  - id: ${id}
    provider: openai-compatible
    kind: embedding
    owned_by: tests
    created: 1735689600
    upstream: { model: text-embedding-3-small, base_url: "${baseUrl}", api_key_env: ${keyVariable} }
    pricing: { input: "${options.inputPrice}" }
    context_window: 8191
    embedding: { dimensions: ${options.dimensions}, shortenable: true${batch} }`;
}

/** Writes a catalog of the given YAML model entries to a new temporary file; returns its path. */
export function writeCatalog(prefix: string, entries: readonly string[]): string {
  const path = join(mkdtempSync(join(tmpdir(), `${prefix}-`)), 'catalog.yaml');
  writeFileSync(path, `models:\n${entries.join('\n')}\n`);
  return path;
}

/** Metering's running totals of one API key. */
export interface MeteredUsage {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_pico_usd: bigint;
}

/**
 * What metering has recorded for an API key, found as auth stores it (`auth:key:<sha256>` names
 * its key id) and as metering totals it (`metering:key:{<key_id>}`). Each cluster has a key of its
 * own, so a test compares these totals before and after its requests.
 */
export async function meteredUsage(
  redis: { hget(key: string, field: string): Promise<string | null>; hgetall(key: string): Promise<Record<string, string>> },
  apiKey: string,
): Promise<MeteredUsage> {
  const keyId = await redis.hget(`auth:key:${createHash('sha256').update(apiKey).digest('hex')}`, 'key_id');
  if (!keyId) throw new Error('the API key is not stored');
  const totals = await redis.hgetall(`metering:key:{${keyId}}`);
  return {
    requests: Number(totals.requests ?? 0),
    prompt_tokens: Number(totals.prompt_tokens ?? 0),
    completion_tokens: Number(totals.completion_tokens ?? 0),
    cost_pico_usd: BigInt(totals.cost_pico_usd ?? '0'),
  };
}

/**
 * What metering has recorded for an API key once it is quiet: the totals read twice, 300 ms
 * apart, until they agree. A test reads its starting point with it, so that the events of the
 * requests before it (metered a few milliseconds after their answers) are not counted as its own.
 */
export async function quietMeteredUsage(redis: Parameters<typeof meteredUsage>[0], apiKey: string, timeoutMs = 10_000): Promise<MeteredUsage> {
  const deadline = Date.now() + timeoutMs;
  let last = await meteredUsage(redis, apiKey);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    const now = await meteredUsage(redis, apiKey);
    if (now.requests === last.requests && now.cost_pico_usd === last.cost_pico_usd) return now;
    if (Date.now() > deadline) throw new Error('metering did not become quiet');
    last = now;
  }
}

/**
 * Metering's totals for an API key once metering has acknowledged every usage event of the
 * cluster's stream (its durable consumer has none pending or unacknowledged) and the totals stand
 * still: what every answered request so far comes to, none still on its way.
 */
export async function settledMeteredUsage(cluster: Cluster, redis: Parameters<typeof meteredUsage>[0], timeoutMs = 20_000): Promise<MeteredUsage> {
  const connection = await connect({ servers: natsServers(cluster.natsUrl), timeout: 2_000 });
  try {
    const manager = await connection.jetstreamManager();
    await eventually(
      async () => {
        const info = await manager.consumers.info(cluster.usageStream, 'metering').catch(() => undefined);
        return (info && info.num_pending === 0 && info.num_ack_pending === 0) || undefined;
      },
      'metering to acknowledge every usage event of the stream',
      timeoutMs,
      100,
    );
  } finally {
    await connection.close();
  }
  return quietMeteredUsage(redis, cluster.apiKey);
}

/** Metering's totals for an API key once they count at least `requests` requests, polled until then. */
export function meteredAtLeast(
  redis: Parameters<typeof meteredUsage>[0],
  apiKey: string,
  requests: number,
  options: { description: string; timeoutMs: number; intervalMs?: number },
): Promise<MeteredUsage> {
  return eventually(
    async () => {
      const usage = await meteredUsage(redis, apiKey);
      return usage.requests >= requests && usage;
    },
    options.description,
    options.timeoutMs,
    options.intervalMs,
  );
}

/** The value of a counter or gauge on a /metrics page, summed over the series matching `labels`. */
export async function metric(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(url)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([label, value]) => line.includes(`${label}="${value}"`))) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** Waits until the metric `name` at `url` (summed as `metric` sums it) is `expected`; `what` names the wait in its timeout's error. */
export async function metricReaches(url: string, name: string, expected: number, what: string, timeoutMs: number, intervalMs = 200): Promise<void> {
  await eventually(async () => (await metric(url, name)) === expected || undefined, what, timeoutMs, intervalMs);
}

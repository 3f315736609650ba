/**
 * The Redis client every service uses, for one Redis server or a Redis Cluster (Valkey and managed
 * clusters in cluster mode alike). REDIS_URL names either:
 *   redis://[user:password@]host:port[/db]        one server (rediss:// with TLS)
 *   redis-cluster://[user:password@]host:port,host:port,...
 *                                                   a cluster, by some of its nodes (rediss-cluster://
 *                                                   with TLS); the client learns the rest.
 * Every script the services run declares its keys, and the keys one script touches share a hash tag
 * (`{key_id}`), so the same code runs on both.
 */
import { Cluster, Redis } from 'ioredis';
import type { Logger } from '@gateway/logger';

/** A client of one server or of a cluster: the commands are the same. */
export type RedisClient = Redis | Cluster;

/** What REDIS_URL may look like (config schemas use it). */
export const REDIS_URL_PATTERN = '^rediss?(-cluster)?://';

/** A REDIS_URL taken apart. */
export interface RedisTarget {
  cluster: boolean;
  tls: boolean;
  nodes: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
  /** The database of a single server (clusters have only 0). */
  db: number;
}

/** Parses a REDIS_URL (see the module's comment); throws on anything else. */
export function parseRedisUrl(url: string): RedisTarget {
  const match = /^(rediss?)(-cluster)?:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?([^/?#]+)(?:\/(\d+))?\/?$/.exec(url.trim());
  if (!match) throw new Error('REDIS_URL must be redis://host:port, rediss://, or redis-cluster://host:port,host:port,...');
  const [, scheme, clusterSuffix, user, password, hosts, db] = match;
  const nodes = hosts!
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const at = entry.lastIndexOf(':');
      const host = at > 0 ? entry.slice(0, at) : entry;
      const port = at > 0 ? Number(entry.slice(at + 1)) : 6379;
      if (!Number.isInteger(port) || port <= 0 || port > 65_535) throw new Error(`REDIS_URL names an invalid port in "${entry}"`);
      return { host: host.replace(/^\[|\]$/g, ''), port };
    });
  if (nodes.length === 0) throw new Error('REDIS_URL names no host');
  const cluster = clusterSuffix !== undefined;
  if (!cluster && nodes.length > 1) throw new Error('REDIS_URL lists several hosts: use redis-cluster:// for a cluster');
  return {
    cluster,
    tls: scheme === 'rediss',
    nodes,
    ...(user ? { username: decodeURIComponent(user) } : {}),
    ...(password !== undefined && password !== '' ? { password: decodeURIComponent(password) } : {}),
    db: db === undefined ? 0 : Number(db),
  };
}

/** Whether a client speaks to a cluster. */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/** The clients of every master: one server's own client, or each master of a cluster (for SCAN). */
export function masters(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

/** Options of createRedis. */
export interface RedisClientOptions {
  lazyConnect?: boolean;
  autoPipelining?: boolean;
}

/**
 * A Redis client that fails fast instead of queueing: while Redis is unreachable every command
 * rejects at once (no offline queue, one retry at most, a command timeout for a Redis that hangs),
 * so that auth answers UNAVAILABLE and metering leaves its message for redelivery within a fraction
 * of a second rather than hanging. It reconnects by itself, forever. On a cluster it follows
 * MOVED/ASK redirections and a master's failover to its replica on its own.
 */
export function createRedis(url: string, logger: Logger, options: RedisClientOptions = {}): RedisClient {
  const target = parseRedisUrl(url);
  const common = {
    connectTimeout: 500,
    commandTimeout: 500,
    maxRetriesPerRequest: 1,
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.tls ? { tls: {} } : {}),
  };
  // Commands issued in the same tick leave in one socket write (default). ioredis keeps one such
  // pipeline in flight per connection, so a command issued meanwhile waits for it: good for
  // throughput (metering writes a pulled batch at once), worse for the latency of single calls.
  const autoPipelining = options.autoPipelining ?? true;
  // Reconnect forever, quickly at first, at most every two seconds.
  const retry = (attempt: number) => Math.min(attempt * 100, 2_000);
  const redis: RedisClient = target.cluster
    ? new Cluster(target.nodes, {
        redisOptions: common,
        enableOfflineQueue: false,
        enableAutoPipelining: autoPipelining,
        lazyConnect: options.lazyConnect ?? false,
        clusterRetryStrategy: retry,
        // While a master fails over, its slots answer CLUSTERDOWN or move: retry shortly, then give up
        // (the caller answers UNAVAILABLE, or redelivers).
        retryDelayOnClusterDown: 100,
        retryDelayOnFailover: 100,
        retryDelayOnTryAgain: 100,
        slotsRefreshTimeout: 1_000,
        slotsRefreshInterval: 5_000,
        scaleReads: 'master',
      })
    : new Redis({
        ...common,
        host: target.nodes[0]!.host,
        port: target.nodes[0]!.port,
        db: target.db,
        enableOfflineQueue: false,
        lazyConnect: options.lazyConnect ?? false,
        enableAutoPipelining: autoPipelining,
        retryStrategy: retry,
      });
  let lastErrorLogAt = 0;
  redis.on('error', (error: Error) => {
    // ioredis emits an error per failed reconnect; one line every ten seconds is enough.
    const now = Date.now();
    if (now - lastErrorLogAt < 10_000) return;
    lastErrorLogAt = now;
    logger.warn({ err: { message: error.message } }, 'redis error');
  });
  redis.on('ready', () => logger.info({ cluster: target.cluster }, 'redis ready'));
  return redis;
}

/**
 * Closes a client as a service's stop step: QUIT (the commands sent before it are answered), or,
 * when Redis cannot be reached to take it, the connection dropped at once.
 */
export function closeRedis(client: RedisClient): Promise<unknown> {
  return client.quit().catch(() => client.disconnect());
}

/**
 * A plain client of a REDIS_URL with ioredis's defaults (an offline queue, retries): for tools and
 * tests that inspect what the services store.
 */
export function connectRedis(url: string, options: { lazyConnect?: boolean; maxRetriesPerRequest?: number } = {}): RedisClient {
  const target = parseRedisUrl(url);
  const common = {
    ...(target.username ? { username: target.username } : {}),
    ...(target.password ? { password: target.password } : {}),
    ...(target.tls ? { tls: {} } : {}),
    ...(options.maxRetriesPerRequest !== undefined ? { maxRetriesPerRequest: options.maxRetriesPerRequest } : {}),
  };
  return target.cluster
    ? new Cluster(target.nodes, { redisOptions: common, lazyConnect: options.lazyConnect ?? false, scaleReads: 'master' })
    : new Redis({ ...common, host: target.nodes[0]!.host, port: target.nodes[0]!.port, db: target.db, lazyConnect: options.lazyConnect ?? false });
}

/**
 * Waits until `replicas` replicas of the master that holds `key` have every write this client sent
 * it, at most `timeoutMs`; resolves how many did. 0 replicas resolves at once. On one server the
 * server is the master. Used after writes that must survive a failover (metered usage, key
 * changes): Redis replicates asynchronously, so a master lost right after a write can lose it.
 */
export async function waitForReplicas(client: RedisClient, key: string, replicas: number, timeoutMs: number): Promise<number> {
  if (replicas <= 0) return 0;
  // A pipeline goes to the node of its keys; WAIT, which has none, goes along with the EXISTS.
  const results = (await client.pipeline().exists(key).call('WAIT', String(replicas), String(timeoutMs)).exec()) ?? [];
  const [error, acknowledged] = results[1] ?? [new Error('no reply to WAIT'), 0];
  if (error) throw error;
  return Number(acknowledged);
}

/** Every key matching a glob pattern, from every master (SCAN, never KEYS): for tools and tests. */
export async function keysMatching(client: RedisClient, pattern: string): Promise<string[]> {
  const found: string[] = [];
  for (const node of masters(client)) {
    let cursor = '0';
    do {
      const [next, names] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
      cursor = next;
      found.push(...names);
    } while (cursor !== '0');
  }
  return found;
}

/** Deletes every key matching a glob pattern, one command per key (keys of many slots); resolves how many. */
export async function deleteMatching(client: RedisClient, pattern: string): Promise<number> {
  const names = await keysMatching(client, pattern);
  const deleted = await Promise.all(names.map((name) => client.unlink(name)));
  return deleted.reduce((sum, count) => sum + count, 0);
}

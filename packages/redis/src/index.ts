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
export { Cluster, Redis } from 'ioredis';
export {
  closeRedis,
  connectRedis,
  createRedis,
  deleteMatching,
  isCluster,
  keysMatching,
  masters,
  parseRedisUrl,
  REDIS_URL_PATTERN,
  type RedisClient,
  type RedisClientOptions,
  type RedisTarget,
  waitForReplicas,
} from './client.js';
export { ReplicaWaiter, type ReplicaWaiterOptions } from './replica-waiter.js';
export {
  checkEvictionPolicy,
  EvictingRedisError,
  type EvictionGuardOptions,
  type EvictionPolicyOptions,
  guardEvictionPolicy,
  NO_EVICTION,
  readMemory,
  readMemoryOfMasters,
  type RedisMemory,
} from './eviction-policy.js';
export { DEFAULT_MEMORY_WATCH_INTERVAL_MS, isFull, RedisMemoryWatch, type RedisMemoryWatchOptions } from './memory-watch.js';
export { SecretCipher } from './secret-cipher.js';
export { type HashChange, VersionedHash, type VersionedHashOptions, type VersionedSet } from './versioned-hash.js';

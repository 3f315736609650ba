import { describe, expect, it } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { createRedis, parseRedisUrl } from './index.js';
import { createLogger } from '@gateway/logger';

describe('REDIS_URL', () => {
  it('names one server, with credentials, TLS and a database', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({ cluster: false, tls: false, nodes: [{ host: '127.0.0.1', port: 6379 }], db: 0 });
    expect(parseRedisUrl('rediss://gateway:s%40cret@redis.internal:6380/2')).toEqual({
      cluster: false,
      tls: true,
      nodes: [{ host: 'redis.internal', port: 6380 }],
      username: 'gateway',
      password: 's@cret',
      db: 2,
    });
    expect(parseRedisUrl('redis://:only-password@redis')).toMatchObject({ nodes: [{ host: 'redis', port: 6379 }], password: 'only-password' });
  });

  it('names a cluster by some of its nodes', () => {
    expect(parseRedisUrl('redis-cluster://10.0.0.1:7000,10.0.0.2:7001, 10.0.0.3:7002')).toEqual({
      cluster: true,
      tls: false,
      db: 0,
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '10.0.0.3', port: 7002 },
      ],
    });
    expect(parseRedisUrl('rediss-cluster://:pw@clustercfg.cache.amazonaws.com:6379')).toMatchObject({
      cluster: true,
      tls: true,
      password: 'pw',
      nodes: [{ host: 'clustercfg.cache.amazonaws.com', port: 6379 }],
    });
  });

  it('rejects what is neither, and several hosts without the cluster scheme', () => {
    expect(() => parseRedisUrl('localhost:6379')).toThrow(/REDIS_URL must be/);
    expect(() => parseRedisUrl('http://127.0.0.1:6379')).toThrow(/REDIS_URL must be/);
    expect(() => parseRedisUrl('redis://a:1,b:2')).toThrow(/redis-cluster:\/\//);
    expect(() => parseRedisUrl('redis-cluster://a:99999')).toThrow(/invalid port/);
  });

  it('gives a cluster client for a cluster and a plain one for a server', () => {
    const logger = createLogger('test', 'silent');
    const cluster = createRedis('redis-cluster://127.0.0.1:1,127.0.0.1:2', logger, { lazyConnect: true });
    const single = createRedis('redis://127.0.0.1:1', logger, { lazyConnect: true });
    expect(cluster).toBeInstanceOf(Cluster);
    expect(single).toBeInstanceOf(Redis);
    cluster.disconnect();
    single.disconnect();
  });
});

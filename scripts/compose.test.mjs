/**
 * docker-compose.yml as `docker compose` reads it: every service tells compose when it is healthy
 * (and waits on its dependencies' health), runs an exact image version, and Redis keeps its data
 * (an append-only file on a named volume) across `docker compose down`/`up`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const compose = parse(readFileSync(join(import.meta.dirname, '..', 'docker-compose.yml'), 'utf8'), { merge: true });
const services = Object.entries(compose.services);

describe('docker-compose.yml', () => {
  it('runs the dependencies and the ten services, and a Redis for stored responses only in its profile', () => {
    const byDefault = services.filter(([, service]) => !service.profiles).map(([name]) => name);
    expect(byDefault.sort()).toEqual([
      'auth',
      'batch',
      'cache',
      'edge',
      'executor',
      'guard',
      'mcp',
      'metering',
      'nats',
      'postgres',
      'redis',
      'redis-cache',
      'request-log',
      'router',
    ]);
  });

  it('points the edge at the guard, and starts it once the guard is healthy', () => {
    expect(compose.services.edge.environment.GUARD_SERVICE_ADDR).toBe('dns:///guard:50056');
    expect(compose.services.edge.depends_on.guard).toEqual({ condition: 'service_healthy' });
    expect(compose.services.guard.environment).toMatchObject({ SERVICE: 'guard', GUARD_LISTEN_ADDR: '0.0.0.0:50056', GUARD_METRICS_PORT: '9106' });
    expect(compose.services['redis-responses'].profiles).toEqual(['responses-redis']);
  });

  it("points the edge at the cache, and the cache's entries at a bounded, evicting Redis of their own", () => {
    expect(compose.services.edge.environment.CACHE_SERVICE_ADDR).toBe('dns:///cache:50058');
    expect(compose.services.edge.depends_on.cache).toEqual({ condition: 'service_healthy' });
    expect(compose.services.cache.environment).toMatchObject({
      SERVICE: 'cache',
      CACHE_LISTEN_ADDR: '0.0.0.0:50058',
      CACHE_METRICS_PORT: '9108',
      CACHE_REDIS_URL: 'redis://redis-cache:6379',
      REDIS_URL: 'redis://redis:6379',
    });
    const command = compose.services['redis-cache'].command.join(' ');
    expect(command).toMatch(/--maxmemory \d+mb/);
    expect(command).toMatch(/--maxmemory-policy allkeys-lru/);
    expect(command).toMatch(/--appendonly no/);
    expect(compose.services['redis-cache'].volumes).toBeUndefined();
  });

  it("points the edge at the batch service, and the batch service at compose's PostgreSQL and the edge", () => {
    expect(compose.services.edge.environment.BATCH_SERVICE_ADDR).toBe('dns:///batch:50059');
    expect(compose.services.edge.depends_on.batch).toEqual({ condition: 'service_healthy' });
    expect(compose.services.batch.environment).toMatchObject({
      SERVICE: 'batch',
      BATCH_LISTEN_ADDR: '0.0.0.0:50059',
      BATCH_METRICS_PORT: '9109',
      BATCH_EDGE_URL: 'http://edge:8080',
    });
    expect(compose.services.batch.environment.DATABASE_URL).toMatch(/@postgres:5432\//);
    // A development key (32 bytes), unless .env sets one.
    const developmentKey = String(compose.services.batch.environment.BATCH_SECRETS_KEY).replace(/^\$\{BATCH_SECRETS_KEY:-(.*)\}$/, '$1');
    expect(Buffer.from(developmentKey, 'base64')).toHaveLength(32);
    expect(compose.services.batch.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
  });

  it.each(services)('gives %s a healthcheck', (_name, service) => {
    expect(service.healthcheck?.test?.length).toBeGreaterThan(0);
    expect(service.healthcheck.disable).not.toBe(true);
  });

  it.each(services)('starts %s once each service it depends on is healthy', (_name, service) => {
    for (const [dependency, condition] of Object.entries(service.depends_on ?? {})) {
      expect(compose.services[dependency], dependency).toBeDefined();
      expect(condition, dependency).toEqual({ condition: 'service_healthy' });
    }
  });

  it.each(services)('runs an exact image version in %s (a patch version, never latest), or the one built here', (name, service) => {
    // The digest after the tag (image-pins.test.mjs checks it) is not part of the version.
    const [, tag = ''] = service.image.split('@')[0].split(':');
    if (service.build) expect(tag).toBe('local');
    // PostgreSQL numbers its releases major.minor, the minor being the patch release.
    else if (name === 'postgres') expect(tag).toMatch(/^\d+\.\d+(-[a-z0-9.]+)?$/);
    else expect(tag).toMatch(/^\d+\.\d+\.\d+(-[a-z0-9.]+)?$/);
  });

  it('keeps Redis in an append-only file on a named volume', () => {
    const redis = compose.services.redis;
    expect(redis.command.join(' ')).toMatch(/--appendonly yes/);
    const [volume, target] = redis.volumes[0].split(':');
    expect(target).toBe('/data');
    expect(Object.keys(compose.volumes)).toContain(volume);
  });
});

/**
 * The upstream servers in a real Redis, as two replicas see them: a change made through one is
 * served by the other within the reload interval, headers are stored sealed (no value in Redis)
 * and opened again, and a replica with another secrets key leaves a server out rather than
 * send it without its headers.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { connectRedis, deleteMatching, type RedisClient } from '@gateway/redis';
import { eventually, redisUrl } from '@gateway/testing';
import { SecretCipher } from '@gateway/redis';
import { ServerRegistry } from './server-registry.js';

const KEY = randomBytes(32).toString('base64');
const prefix = `mcp-test-${randomBytes(4).toString('hex')}:`;
const logger = createLogger('mcp', 'silent');
let redis: RedisClient;
const registries: ServerRegistry[] = [];

function registry(key = KEY): ServerRegistry {
  const created = new ServerRegistry(redis, new SecretCipher(key, 'MCP_SECRETS_KEY'), { prefix, intervalMs: 100, logger });
  registries.push(created);
  return created;
}

beforeAll(async () => {
  redis = connectRedis(await redisUrl());
});

afterAll(async () => {
  for (const each of registries) each.stop();
  await deleteMatching(redis, `${prefix}*`);
  redis.disconnect();
});

describe('ServerRegistry', () => {
  it('serves a change made on one replica on another within the interval, its headers sealed in Redis', async () => {
    const [writer, reader] = [registry(), registry()];
    await Promise.all([writer.start(), reader.start()]);
    await writer.put({
      name: 'alpha',
      url: 'http://127.0.0.1:9/mcp',
      transport: 'streamable_http',
      auth: 'none',
      description: '',
      headers: { 'x-api-key': 'topsecret-1' },
    });
    // Seen by polling, capped far above the 100 ms reload interval: a change that never reaches the
    // other replica times out.
    await eventually(() => reader.current.get('alpha'), 'the other replica to serve alpha', 10_000, 10);
    expect(reader.current.get('alpha')?.headers).toEqual({ 'x-api-key': 'topsecret-1' });
    const raw = await redis.hget(`${prefix}{servers}`, 'alpha');
    expect(raw).not.toContain('topsecret-1');
    expect((await writer.get('alpha'))?.header_names).toEqual(['x-api-key']);

    // Headers left out keep the stored ones.
    await writer.put({ name: 'alpha', url: 'http://127.0.0.1:9/other', transport: 'sse', auth: 'none', description: 'moved', headers: undefined });
    await eventually(() => reader.current.get('alpha')?.url === 'http://127.0.0.1:9/other', 'the change', 5_000, 10);
    expect(reader.current.get('alpha')?.headers).toEqual({ 'x-api-key': 'topsecret-1' });

    expect(await writer.delete('alpha')).toBe(true);
    await eventually(() => !reader.current.has('alpha'), 'the removal', 5_000, 10);
    expect(await writer.delete('alpha')).toBe(false);
  });

  it('leaves out a server whose headers another key sealed', async () => {
    const writer = registry();
    await writer.put({
      name: 'beta',
      url: 'http://127.0.0.1:9/mcp',
      transport: 'streamable_http',
      auth: 'none',
      description: '',
      headers: { authorization: 'Bearer x' },
    });
    const stranger = registry(randomBytes(32).toString('base64'));
    await stranger.start();
    expect(stranger.current.has('beta')).toBe(false);
    expect(writer.current.has('beta')).toBe(true);
  });

  it.each([
    ['name', { name: 'Bad_Name' }],
    ['url', { url: 'ftp://example.com' }],
    ['url', { url: 'http://user:pass@example.com/mcp' }],
    ['headers', { headers: { 'content-type': 'text/plain' } }],
    ['headers', { headers: { 'x-api-key': 'a\r\nb' } }],
  ])('refuses a bad %s', async (param, change) => {
    const input = {
      name: 'gamma',
      url: 'http://127.0.0.1:9/mcp',
      transport: 'streamable_http' as const,
      auth: 'none' as const,
      description: '',
      headers: {},
      ...change,
    };
    await expect(registry().put(input)).rejects.toMatchObject({ reason: 'invalid_request', param });
  });
});

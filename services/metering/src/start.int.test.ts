/**
 * Metering's start when JetStream does not answer yet (a NATS cluster electing a leader, a server
 * replaced): it waits and retries instead of exiting, and starts consuming once JetStream is back.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import type { Catalog } from '@gateway/catalog';
import { createLogger } from '@gateway/logger';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { eventually, freePort, natsServerBinary, redisUrl, serverProcess, TEST_USAGE_STREAM_MAX_BYTES, type ServerProcess } from '@gateway/testing';
import { createServer } from './app.js';

const binary = natsServerBinary();
const cleanups: Array<() => Promise<unknown> | unknown> = [];

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

describe.skipIf(!binary)('metering at start', () => {
  it('waits for JetStream, retrying, and consumes once it answers, rather than exiting', async () => {
    const port = await freePort();
    const store = mkdtempSync(join(tmpdir(), 'metering-start-'));
    // A NATS server without JetStream first: every JetStream request is refused.
    let server: ServerProcess = serverProcess(binary!, ['-a', '127.0.0.1', '-p', String(port)], port);
    await server.start();
    cleanups.push(() => server.kill());
    const nc: NatsConnection = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    cleanups.push(() => nc.close());
    const redis: RedisClient = connectRedis(await redisUrl());
    cleanups.push(() => redis.quit());
    const warnings: string[] = [];
    const logger = createLogger('metering-start-test', 'warn', {
      hooks: {
        logMethod(args) {
          warnings.push(String(args.find((arg) => typeof arg === 'string') ?? ''));
        },
      },
    });
    const id = randomUUID().replaceAll('-', '');
    const metering = createServer({
      nc,
      redis,
      catalog: { models: [], byId: new Map() } as Catalog,
      logger,
      stream: `USAGE_START_${id}`,
      subject: `start.${id}.usage.v1.completion`,
      subjects: [`start.${id}.usage.v1.>`],
      maxBytes: TEST_USAGE_STREAM_MAX_BYTES,
      durableName: `metering-${id}`,
    });
    cleanups.push(() => metering.stop());
    let outcome: 'pending' | 'started' | 'failed' = 'pending';
    const started = metering.start().then(
      () => (outcome = 'started'),
      () => (outcome = 'failed'),
    );
    await eventually(() => warnings.includes('usage stream not reachable at start; retrying'), 'a retry to be logged', 10_000);
    expect(outcome).toBe('pending');

    // JetStream comes: the same port, now with JetStream on.
    await server.kill();
    server = serverProcess(binary!, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], port);
    await server.start();
    await started;
    expect(outcome).toBe('started');
    const manager = await nc.jetstreamManager();
    expect((await manager.consumers.info(`USAGE_START_${id}`, `metering-${id}`)).name).toBe(`metering-${id}`);
  }, 60_000);
});

import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { createLogger } from '@gateway/logger';
import { eventually, natsServers, natsUrl, TEST_USAGE_STREAM_MAX_BYTES } from '@gateway/testing';
import type { UsageEventOutput } from '@gateway/proto';
import { decodeUsageEvent, encodeUsageEvent } from './usage-codec.js';
import { PoisonMessageError, startDurableConsumer } from './durable-consumer.js';
import { ensureUsageStream } from './usage-stream.js';

const logger = createLogger('messaging-test', 'silent');

// What these tests wait for is bounded generously: the bounds only end a wait for what will never
// come (a lost message, a consumer that hangs), never a slow delivery on a machine loaded by other
// test runs (or by the cluster pass, where each acknowledgement goes to three NATS replicas).
const WAIT_MS = 60_000;
const TEST_TIMEOUT_MS = 3 * WAIT_MS;

/** Waits until the consumer has nothing left to deliver and nothing delivered unacknowledged. */
async function nothingLeftPending(nc: NatsConnection, stream: string, consumer: string): Promise<void> {
  const manager = await nc.jetstreamManager();
  await eventually(
    async () => {
      const info = await manager.consumers.info(stream, consumer);
      return info.num_ack_pending === 0 && info.num_pending === 0;
    },
    'nothing left pending or unacknowledged',
    WAIT_MS,
  );
}

describe('startDurableConsumer', () => {
  let nc: NatsConnection;
  const id = randomUUID().replaceAll('-', '');
  const names = { stream: `USAGE_TEST_${id}`, subject: `test.${id}.usage.v1.completion`, subjects: [`test.${id}.usage.v1.>`] };

  beforeAll(async () => {
    nc = await connect({ servers: natsServers(await natsUrl()) });
    await ensureUsageStream(nc, { ...names, maxBytes: TEST_USAGE_STREAM_MAX_BYTES });
  });

  afterAll(async () => {
    const manager = await nc.jetstreamManager();
    await manager.streams.delete(names.stream).catch(() => undefined);
    await nc.drain();
  });

  it('acknowledges handled messages, redelivers failures and terminates poison', { timeout: TEST_TIMEOUT_MS }, async () => {
    const js = nc.jetstream();
    await js.publish(names.subject, encodeUsageEvent({ event_id: 'ok', model_id: 'm' }));
    await js.publish(names.subject, new Uint8Array([0xff, 0xff, 0xff]));
    await js.publish(names.subject, encodeUsageEvent({ event_id: 'flaky', model_id: 'm' }));
    await js.publish(names.subject, encodeUsageEvent({ event_id: 'unknown-model', model_id: 'nope' }));

    const handled: string[] = [];
    const poison: string[] = [];
    let flakyAttempts = 0;
    const consumer = await startDurableConsumer<UsageEventOutput>(nc, {
      stream: names.stream,
      durableName: `test-${id}`,
      filterSubject: names.subject,
      decode: decodeUsageEvent,
      logger,
      backoffMs: [200, 400],
      maxDeliver: 5,
      onPoison: (reason) => poison.push(reason),
      handle: async (event) => {
        if (event.model_id === 'nope') throw new PoisonMessageError('unknown_model', 'no such model');
        if (event.event_id === 'flaky' && (flakyAttempts += 1) === 1) throw new Error('redis is down');
        handled.push(event.event_id ?? '');
      },
    });
    try {
      await eventually(() => handled.length === 2 && poison.length === 2, 'both good messages to be handled and both poison ones terminated', WAIT_MS);
      expect(handled).toEqual(['ok', 'flaky']);
      expect(flakyAttempts).toBe(2);
      expect(poison.sort()).toEqual(['undecodable', 'unknown_model']);

      await nothingLeftPending(nc, names.stream, `test-${id}`);
    } finally {
      await consumer.stop();
    }
  });

  it('handles the messages of a burst together, each exactly once, and stops without losing any', { timeout: TEST_TIMEOUT_MS }, async () => {
    const subject = `test.${id}.usage.v1.burst`;
    const js = nc.jetstream();
    const ids = Array.from({ length: 300 }, (_, index) => `burst-${index}`);
    await Promise.all(ids.map((eventId) => js.publish(subject, encodeUsageEvent({ event_id: eventId, model_id: 'm' }))));

    const seen = new Map<string, number>();
    let inFlight = 0;
    let mostInFlight = 0;
    const start = () =>
      startDurableConsumer<UsageEventOutput>(nc, {
        stream: names.stream,
        durableName: `burst-${id}`,
        filterSubject: subject,
        decode: decodeUsageEvent,
        logger,
        backoffMs: [500],
        batchSize: 64,
        handle: async (event) => {
          inFlight += 1;
          mostInFlight = Math.max(mostInFlight, inFlight);
          await new Promise((resolve) => setTimeout(resolve, 2));
          seen.set(event.event_id!, (seen.get(event.event_id!) ?? 0) + 1);
          inFlight -= 1;
        },
      });
    // Stopped partway and started again, as a restarted replica: whatever was in flight is
    // finished or handed back, never dropped.
    const first = await start();
    await eventually(() => seen.size >= 50, 'some of the burst to be handled', WAIT_MS);
    await first.stop();
    const second = await start();
    try {
      await eventually(() => seen.size === ids.length, 'every message of the burst to be handled', WAIT_MS);
      expect(mostInFlight).toBeGreaterThan(1);
      await nothingLeftPending(nc, names.stream, `burst-${id}`);
      expect([...seen.values()].every((count) => count === 1)).toBe(true);
    } finally {
      await second.stop();
    }
  });
});

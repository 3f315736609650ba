/**
 * The usage stream on a 3-node NATS cluster with JetStream, started on loopback by the test: three
 * copies of every event when USAGE_STREAM_REPLICAS says 3, and a drill that kills the stream's
 * leader under load and brings it back with an empty disk: every event the publisher was given is
 * still stored exactly once (with one replica, the events that server held would be gone). (The cluster needs Debian's `nats-server`; without it the suite is skipped and says so.)
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from 'nats';
import { createLogger } from '@gateway/logger';
import { eventually, hasNatsServer, startNatsCluster, streamWithLeader, TEST_USAGE_STREAM_MAX_BYTES, type NatsCluster } from '@gateway/testing';
import { connectNats } from './connect-nats.js';
import { decodeUsageEvents } from './usage-codec.js';
import { UsagePublisher } from './usage-publisher.js';
import { ensureUsageStream } from './usage-stream.js';

const logger = createLogger('messaging-test', 'silent');
const available = hasNatsServer();
if (!available) console.warn('nats-server is not installed (apt-get install nats-server): the NATS cluster tests are skipped');

describe.skipIf(!available)('the usage stream on a 3-node NATS cluster', () => {
  let cluster: NatsCluster;
  let nc: NatsConnection;
  const id = randomUUID().replaceAll('-', '');
  const names = { stream: `USAGE_TEST_${id}`, subject: `test.${id}.usage.v1.completion`, subjects: [`test.${id}.usage.v1.>`] };

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    nc = await connectNats(cluster.url, 'cluster-test', logger);
    // JetStream elects its meta leader a moment after the servers start.
    await eventually(
      () => ensureUsageStream(nc, { ...names, replicas: 3, maxBytes: TEST_USAGE_STREAM_MAX_BYTES }).catch(() => undefined),
      'the stream to be created on the cluster',
      30_000,
      250,
    );
  }, 60_000);

  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  it('keeps every event on three servers when USAGE_STREAM_REPLICAS is 3', async () => {
    const manager = await nc.jetstreamManager();
    const info = await manager.streams.info(names.stream);
    expect(info.config.num_replicas).toBe(3);
    expect(info.cluster?.leader).toMatch(/^n[123]$/);
    expect(info.cluster?.replicas?.map((replica) => replica.name).sort()).toEqual(['n1', 'n2', 'n3'].filter((name) => name !== info.cluster?.leader));
  });

  it('never lowers the replicas at a start: one started with USAGE_STREAM_REPLICAS=1 keeps the stream at 3 and says so', async () => {
    const warnings: Array<{ details: object; message: string }> = [];
    // Only the replicas' warnings: an older test server also draws the discard: new warning.
    const logger = { warn: (details: object, message: string) => 'replicas' in details && warnings.push({ details, message }) };
    const info = await ensureUsageStream(nc, { ...names, replicas: 1, maxBytes: TEST_USAGE_STREAM_MAX_BYTES, logger });
    expect(info.config.num_replicas).toBe(3);
    const manager = await nc.jetstreamManager();
    expect((await manager.streams.info(names.stream)).config.num_replicas).toBe(3);
    expect(warnings).toEqual([{ details: { stream: names.stream, replicas: 3, requested: 1 }, message: expect.stringContaining('nats stream edit') }]);
    // Raising still works: the same call with 3 leaves it at 3 without a word.
    await ensureUsageStream(nc, { ...names, replicas: 3, maxBytes: TEST_USAGE_STREAM_MAX_BYTES, logger });
    expect(warnings).toHaveLength(1);
  });

  it('stores every event exactly once when the stream leader is lost with its disk under load and replaced', async () => {
    const manager = await nc.jetstreamManager();
    const leader = (await manager.streams.info(names.stream)).cluster!.leader!;
    const publisher = new UsagePublisher(nc, logger, { subject: names.subject, publishTimeoutMs: 1_000 });
    const published: string[] = [];
    const publishFor = async (milliseconds: number) => {
      const end = Date.now() + milliseconds;
      while (Date.now() < end) {
        // About 1,000 events a second, several per loop turn as an edge under load sends them.
        for (let index = 0; index < 5; index += 1) {
          const eventId = `event-${published.length}`;
          published.push(eventId);
          publisher.publish({ event_id: eventId, key_id: 'key_test', model_id: 'm', usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    await publishFor(1_000);
    await cluster.node(leader).kill();
    cluster.node(leader).wipeStore();
    await publishFor(2_000);
    await cluster.node(leader).start();
    await publishFor(1_000);
    await publisher.flush(30_000);
    expect(publisher.dropped).toBe(0);
    expect(publisher.pending).toBe(0);

    // Another server leads the stream now; every stored message is read back.
    const info = await streamWithLeader(() => manager.streams.info(names.stream), 'the stream to have a leader', 20_000);
    const stored = new Map<string, number>();
    for (let sequence = info.state.first_seq; sequence <= info.state.last_seq; sequence += 1) {
      // A JetStream API call answered 503 while the stream's group settles (the restarted server
      // rejoining) is asked again: the read is what is tested, not the election's timing.
      const message = await eventually(
        () => manager.streams.getMessage(names.stream, { seq: sequence }).catch(() => undefined),
        `stored message ${sequence}`,
        20_000,
        100,
      );
      for (const event of decodeUsageEvents(message.data)) stored.set(event.event_id ?? '', (stored.get(event.event_id ?? '') ?? 0) + 1);
    }
    expect(stored.size).toBe(published.length);
    expect(published.every((eventId) => stored.get(eventId) === 1)).toBe(true);

    // The replaced server caught up from the others: all three hold the events again.
    await eventually(
      async () => {
        const current = await manager.streams.info(names.stream).catch(() => undefined);
        return current?.cluster?.replicas?.every((replica) => replica.current && !replica.lag) ? true : undefined;
      },
      'the restarted server to catch up',
      20_000,
      200,
    );
  }, 60_000);
});

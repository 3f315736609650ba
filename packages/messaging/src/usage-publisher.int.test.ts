import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { createLogger } from '@gateway/logger';
import { eventually, natsUrl, startTcpProxy } from '@gateway/testing';
import type { UsageEvent } from '@gateway/proto';
import { connectNats } from './connect-nats.js';
import { decodeUsageEvent } from './usage-codec.js';
import { UsagePublisher } from './usage-publisher.js';
import { ensureUsageStream } from './usage-stream.js';

const logger = createLogger('messaging-test', 'silent');

/** A stream and subject of this test alone, so parallel runs and the real USAGE stream never mix. */
function uniqueStream() {
  const id = randomUUID().replaceAll('-', '');
  return { stream: `USAGE_TEST_${id}`, subject: `test.${id}.usage.v1.completion`, subjects: [`test.${id}.usage.v1.>`] };
}

function event(eventId: string): UsageEvent {
  return {
    event_id: eventId,
    key_id: 'key_test',
    model_id: 'sim-small',
    provider: 'simulated',
    usage: { prompt_tokens: 12, completion_tokens: 30, total_tokens: 42, cached_tokens: 2 },
    received_at_ms: 1_763_700_000_000,
    outcome: 'OUTCOME_COMPLETED',
  };
}

async function streamMessages(nc: NatsConnection, stream: string): Promise<number> {
  const manager = await nc.jetstreamManager();
  return (await manager.streams.info(stream)).state.messages;
}

describe('UsagePublisher', () => {
  let nc: NatsConnection;
  const created: string[] = [];

  beforeAll(async () => {
    nc = await connect({ servers: await natsUrl() });
  });

  afterAll(async () => {
    const manager = await nc.jetstreamManager();
    for (const stream of created) await manager.streams.delete(stream).catch(() => undefined);
    await nc.drain();
  });

  it('stores an event published twice with the same id once, with its content intact', async () => {
    const names = uniqueStream();
    created.push(names.stream);
    await ensureUsageStream(nc, names);
    const publisher = new UsagePublisher(nc, logger, { subject: names.subject });
    const id = randomUUID();
    publisher.publish(event(id));
    publisher.publish(event(id));
    await publisher.flush(5_000);
    expect(publisher.pending).toBe(0);
    expect(publisher.published).toBe(2);
    expect(await streamMessages(nc, names.stream)).toBe(1);

    const manager = await nc.jetstreamManager();
    const stored = await manager.streams.getMessage(names.stream, { seq: 1 });
    expect(stored.header.get('Nats-Msg-Id')).toBe(id);
    expect(decodeUsageEvent(stored.data)).toMatchObject({ event_id: id, key_id: 'key_test', usage: { prompt_tokens: 12, completion_tokens: 30, cached_tokens: 2 }, outcome: 'OUTCOME_COMPLETED' });
  });

  it('keeps retrying while the stream is missing and delivers once it exists', async () => {
    const names = uniqueStream();
    created.push(names.stream);
    const publisher = new UsagePublisher(nc, logger, { subject: names.subject, initialBackoffMs: 20, maxBackoffMs: 100, publishTimeoutMs: 500 });
    publisher.publish(event(randomUUID()));
    publisher.publish(event(randomUUID()));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(publisher.pending).toBe(2);

    await ensureUsageStream(nc, names);
    await eventually(() => publisher.pending === 0, 'the queued events to be published', 10_000);
    expect(await streamMessages(nc, names.stream)).toBe(2);
    publisher.close();
  });

  it('drops and counts events beyond the queue bound without throwing', async () => {
    const names = uniqueStream();
    let drops = 0;
    const publisher = new UsagePublisher(nc, logger, { subject: names.subject, maxQueue: 2, initialBackoffMs: 1_000, publishTimeoutMs: 200, onDrop: () => { drops += 1; } });
    for (let index = 0; index < 5; index += 1) publisher.publish(event(randomUUID()));
    publisher.publish({ key_id: 'no id' });
    expect(publisher.pending).toBe(2);
    expect(publisher.dropped).toBe(4);
    expect(drops).toBe(4);
    publisher.close();
  });

  it('delivers events published while NATS is unreachable once it is back', async () => {
    const names = uniqueStream();
    created.push(names.stream);
    await ensureUsageStream(nc, names);
    const target = new URL(await natsUrl());
    const proxy = await startTcpProxy(0, target.hostname, Number(target.port));
    const proxied = await connectNats(`nats://127.0.0.1:${proxy.port}`, 'publisher-test', logger);
    try {
      const publisher = new UsagePublisher(proxied, logger, { subject: names.subject, initialBackoffMs: 50, maxBackoffMs: 200, publishTimeoutMs: 500 });
      await proxy.close();
      const id = randomUUID();
      publisher.publish(event(id));
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(publisher.pending).toBe(1);
      expect(await streamMessages(nc, names.stream)).toBe(0);

      const reopened = await startTcpProxy(proxy.port, target.hostname, Number(target.port));
      try {
        await eventually(() => publisher.pending === 0, 'the event to be published after NATS returned', 15_000);
        expect(await streamMessages(nc, names.stream)).toBe(1);
      } finally {
        publisher.close();
        await proxied.close();
        await reopened.close();
      }
    } finally {
      await proxied.close().catch(() => undefined);
    }
  }, 30_000);
});

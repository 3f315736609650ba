import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NatsConnection } from 'nats';
import { createLogger } from '@gateway/logger';
import { eventually, natsUrl, startTcpProxy, TEST_USAGE_STREAM_MAX_BYTES } from '@gateway/testing';
import { connectNats } from './connect-nats.js';
import { decodeUsageEvent, decodeUsageEvents } from './usage-codec.js';
import { UsagePublisher } from './usage-publisher.js';
import { uniqueStream, useTestStreams, usageEvent } from './testing/usage-fixtures.js';
import { ensureUsageStream } from './usage-stream.js';

const logger = createLogger('messaging-test', 'silent');

async function streamMessages(nc: NatsConnection, stream: string): Promise<number> {
  const manager = await nc.jetstreamManager();
  return (await manager.streams.info(stream)).state.messages;
}

/** A TCP proxy whose server-to-client direction can be silenced while the other keeps flowing. */
interface OneWayProxy {
  readonly port: number;
  /** From now on the server's bytes (acknowledgements, pongs) no longer reach the clients. */
  dropServerBytes(): void;
  /** Cuts every connection; connections made afterwards pass everything again. */
  cut(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A proxy to host:targetPort that can let messages reach NATS while losing everything NATS sends
 * back: stored events whose acknowledgements never arrive. A connection that lost bytes is out of
 * step with the protocol, so it is never resumed, only cut (the proxy closed and opened again on
 * its port).
 */
async function startOneWayProxy(host: string, targetPort: number): Promise<OneWayProxy> {
  let dropping = false;
  const options = { passFromTarget: () => !dropping };
  let proxy = await startTcpProxy(0, host, targetPort, options);
  const port = proxy.port;
  return {
    port,
    dropServerBytes: () => {
      dropping = true;
    },
    cut: async () => {
      await proxy.close();
      dropping = false;
      proxy = await startTcpProxy(port, host, targetPort, options);
    },
    close: () => proxy.close(),
  };
}

describe('UsagePublisher', () => {
  const streams = useTestStreams();

  /** A stream and subject of this test alone, created now and deleted after the suite. */
  async function createdStream(): Promise<ReturnType<typeof streams.names>> {
    const names = streams.names();
    await ensureUsageStream(streams.nc, { ...names, maxBytes: TEST_USAGE_STREAM_MAX_BYTES });
    return names;
  }

  it('stores an event published twice with the same id once, with its content intact', async () => {
    const names = await createdStream();
    // One event a message (maxBatch 1): what is checked here is JetStream's de-duplication by message id.
    const publisher = new UsagePublisher(streams.nc, logger, { subject: names.subject, maxBatch: 1 });
    const id = randomUUID();
    publisher.publish(usageEvent(id));
    publisher.publish(usageEvent(id));
    await publisher.flush(5_000);
    expect(publisher.pending).toBe(0);
    expect(publisher.published).toBe(2);
    expect(await streamMessages(streams.nc, names.stream)).toBe(1);

    const manager = await streams.nc.jetstreamManager();
    const stored = await manager.streams.getMessage(names.stream, { seq: 1 });
    expect(stored.header.get('Nats-Msg-Id')).toBe(id);
    expect(decodeUsageEvent(stored.data)).toMatchObject({
      event_id: id,
      key_id: 'key_test',
      usage: { prompt_tokens: 12, completion_tokens: 30, cached_tokens: 2 },
      outcome: 'OUTCOME_COMPLETED',
    });
  });

  it('sends the events published in one turn of the event loop as one message, up to maxBatch, each event once', async () => {
    const names = await createdStream();
    const publisher = new UsagePublisher(streams.nc, logger, { subject: names.subject, maxBatch: 4 });
    const ids = Array.from({ length: 6 }, () => randomUUID());
    for (const id of ids) publisher.publish(usageEvent(id));
    await new Promise((resolve) => setImmediate(resolve));
    const alone = randomUUID();
    publisher.publish(usageEvent(alone));
    await publisher.flush(5_000);
    expect(publisher.published).toBe(7);
    // 4 and 2 from the first turn, then the one of the next turn as a plain UsageEvent.
    expect(await streamMessages(streams.nc, names.stream)).toBe(3);
    const manager = await streams.nc.jetstreamManager();
    const stored = await Promise.all([1, 2, 3].map((seq) => manager.streams.getMessage(names.stream, { seq })));
    expect(stored.map((message) => decodeUsageEvents(message.data).length)).toEqual([4, 2, 1]);
    expect(stored.flatMap((message) => decodeUsageEvents(message.data).map((decoded) => decoded.event_id))).toEqual([...ids, alone]);
    expect(decodeUsageEvent(stored[2]!.data)).toMatchObject({ event_id: alone, usage: { prompt_tokens: 12 } });
    expect(stored[2]!.header.get('Nats-Msg-Id')).toBe(alone);
    expect(stored[0]!.header.get('Nats-Msg-Id')).toMatch(/^batch-/);
    publisher.close();
  });

  it('keeps retrying while the stream is missing and delivers once it exists', async () => {
    const names = streams.names();
    const publisher = new UsagePublisher(streams.nc, logger, {
      subject: names.subject,
      maxBatch: 1,
      initialBackoffMs: 20,
      maxBackoffMs: 100,
      publishTimeoutMs: 500,
    });
    publisher.publish(usageEvent(randomUUID()));
    publisher.publish(usageEvent(randomUUID()));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(publisher.pending).toBe(2);

    // Every refused attempt is sent again, and counted as such.
    expect(publisher.republished).toBeGreaterThanOrEqual(2);

    await ensureUsageStream(streams.nc, { ...names, maxBytes: TEST_USAGE_STREAM_MAX_BYTES });
    await eventually(() => publisher.pending === 0, 'the queued events to be published', 10_000);
    expect(await streamMessages(streams.nc, names.stream)).toBe(2);
    expect(publisher.queued).toBe(2);
    expect(publisher.dropped).toBe(0);
    publisher.close();
  });

  it('pauses between failed rounds for initialBackoffMs, doubling up to maxBackoffMs, and from initialBackoffMs again after an acknowledgement', async () => {
    const names = streams.names();
    // The pause of each failed round, from the publisher's warning (which a round logs once).
    const pauses: number[] = [];
    const recording = createLogger('messaging-test', 'warn', {
      hooks: {
        logMethod(args) {
          const [fields, message] = args as unknown as [{ retry_in_ms?: number }, string];
          if (message === 'usage events not acknowledged; retrying') pauses.push(fields.retry_in_ms!);
        },
      },
    });
    const publisher = new UsagePublisher(streams.nc, recording, {
      subject: names.subject,
      maxBatch: 1,
      initialBackoffMs: 20,
      maxBackoffMs: 100,
      publishTimeoutMs: 500,
    });
    try {
      // No stream captures the subject: every attempt is refused at once (no responders).
      publisher.publish(usageEvent(randomUUID()));
      await eventually(() => pauses.length >= 6, 'six failed rounds', 5_000);
      expect(pauses.slice(0, 6)).toEqual([20, 40, 80, 100, 100, 100]);

      await ensureUsageStream(streams.nc, { ...names, maxBytes: TEST_USAGE_STREAM_MAX_BYTES });
      await eventually(() => publisher.pending === 0, 'the event to be published', 5_000);
      const manager = await streams.nc.jetstreamManager();
      await manager.streams.delete(names.stream);
      const before = pauses.length;
      publisher.publish(usageEvent(randomUUID()));
      await eventually(() => pauses.length >= before + 2, 'two failed rounds after the acknowledgement', 5_000);
      expect(pauses.slice(before, before + 2)).toEqual([20, 40]);
    } finally {
      publisher.close();
    }
  });

  it('drops and counts events beyond the queue bound without throwing, by reason', async () => {
    const names = uniqueStream();
    const drops: string[] = [];
    const publisher = new UsagePublisher(streams.nc, logger, {
      subject: names.subject,
      maxQueue: 2,
      initialBackoffMs: 1_000,
      publishTimeoutMs: 200,
      onDrop: (reason) => drops.push(reason),
    });
    for (let index = 0; index < 5; index += 1) publisher.publish(usageEvent(randomUUID()));
    publisher.publish({ key_id: 'no id' });
    expect(publisher.pending).toBe(2);
    expect(publisher.queued).toBe(2);
    expect(publisher.dropped).toBe(4);
    expect(drops).toEqual(['queue_full', 'queue_full', 'queue_full', 'no_event_id']);
    expect(publisher.droppedBy).toEqual({ queue_full: 3, stream_full: 0, closed: 0, too_large: 0, no_event_id: 1, malformed: 0 });

    // Closing abandons the two held events, and refuses what comes after: both are lost usage.
    publisher.close();
    publisher.publish(usageEvent(randomUUID()));
    expect(publisher.droppedBy).toMatchObject({ queue_full: 3, closed: 3 });
    expect(publisher.dropped).toBe(7);
  });

  it('counts an event larger than the NATS max payload as dropped (too_large) and sends the next one', async () => {
    const names = await createdStream();
    const publisher = new UsagePublisher(streams.nc, logger, { subject: names.subject, maxBatch: 1 });
    try {
      const huge = usageEvent(randomUUID());
      huge.model_id = 'm'.repeat(streams.nc.info!.max_payload + 1);
      publisher.publish(huge);
      publisher.publish(usageEvent(randomUUID()));
      await publisher.flush(5_000);
      expect(publisher.droppedBy.too_large).toBe(1);
      expect(publisher.queued).toBe(2);
      expect(publisher.published).toBe(1);
      expect(await streamMessages(streams.nc, names.stream)).toBe(1);
    } finally {
      publisher.close();
    }
  });

  it('delivers events published while NATS is unreachable once it is back', async () => {
    const names = await createdStream();
    const target = new URL(await natsUrl());
    const proxy = await startTcpProxy(0, target.hostname, Number(target.port));
    const proxied = await connectNats(`nats://127.0.0.1:${proxy.port}`, 'publisher-test', logger);
    try {
      const publisher = new UsagePublisher(proxied, logger, { subject: names.subject, initialBackoffMs: 50, maxBackoffMs: 200, publishTimeoutMs: 500 });
      await proxy.close();
      const id = randomUUID();
      publisher.publish(usageEvent(id));
      await new Promise((resolve) => setTimeout(resolve, 700));
      expect(publisher.pending).toBe(1);
      expect(await streamMessages(streams.nc, names.stream)).toBe(0);

      const reopened = await startTcpProxy(proxy.port, target.hostname, Number(target.port));
      try {
        await eventually(() => publisher.pending === 0, 'the event to be published after NATS returned', 15_000);
        expect(await streamMessages(streams.nc, names.stream)).toBe(1);
      } finally {
        publisher.close();
        await proxied.close();
        await reopened.close();
      }
    } finally {
      await proxied.close().catch(() => undefined);
    }
  }, 30_000);

  it('stores 5,000 events published back to back once each, with at most maxInFlight unacknowledged', async () => {
    const names = await createdStream();
    const maxInFlight = 100;
    const publisher = new UsagePublisher(streams.nc, logger, { subject: names.subject, maxInFlight, maxBatch: 1 });
    // Every copy NATS routes on the subject, seen in this process: a copy seen was sent, so copies
    // seen minus events acknowledged can never exceed the window.
    let copies = 0;
    let widest = 0;
    const watcher = streams.nc.subscribe(names.subject, {
      callback: () => {
        copies += 1;
        widest = Math.max(widest, copies - publisher.published);
      },
    });
    await streams.nc.flush();
    try {
      for (let index = 0; index < 5_000; index += 1) publisher.publish(usageEvent(randomUUID()));
      expect(publisher.pending).toBe(5_000);
      expect(publisher.dropped).toBe(0);

      await publisher.flush(20_000);
      expect(publisher.pending).toBe(0);
      expect(publisher.published).toBe(5_000);
      expect(await streamMessages(streams.nc, names.stream)).toBe(5_000);
      await streams.nc.flush();
      // A healthy stream acknowledges every first attempt: nothing was sent twice.
      expect(copies).toBe(5_000);
      expect(widest).toBeLessThanOrEqual(maxInFlight);
      // A window, not one event at a time.
      expect(widest).toBeGreaterThan(1);
    } finally {
      watcher.unsubscribe();
      publisher.close();
    }
  });

  it('sends an event again when its acknowledgement is lost, and the stream keeps it once', async () => {
    const names = await createdStream();
    const target = new URL(await natsUrl());
    const proxy = await startOneWayProxy(target.hostname, Number(target.port));
    const proxied = await connectNats(`nats://127.0.0.1:${proxy.port}`, 'publisher-lost-ack-test', logger);
    let copies = 0;
    const watcher = streams.nc.subscribe(names.subject, {
      callback: () => {
        copies += 1;
      },
    });
    await streams.nc.flush();
    const publisher = new UsagePublisher(proxied, logger, {
      subject: names.subject,
      maxBatch: 1,
      publishTimeoutMs: 300,
      initialBackoffMs: 20,
      maxBackoffMs: 100,
    });
    try {
      // The publisher's acknowledgement subscription reaches the server before anything is lost.
      await proxied.flush();
      proxy.dropServerBytes();
      const ids = Array.from({ length: 50 }, () => randomUUID());
      for (const id of ids) publisher.publish(usageEvent(id));

      await eventually(async () => (await streamMessages(streams.nc, names.stream)) === 50, 'the events to be stored', 5_000);
      await eventually(() => copies >= 100, 'the unacknowledged events to be sent again', 10_000);
      expect(await streamMessages(streams.nc, names.stream)).toBe(50);
      expect(publisher.published).toBe(0);
      expect(publisher.pending).toBe(50);
      // Each copy beyond the first was a re-send the publisher counted.
      expect(publisher.republished).toBeGreaterThanOrEqual(50);

      await proxy.cut();
      await eventually(() => publisher.pending === 0, 'the events to be acknowledged after reconnecting', 15_000);
      expect(publisher.published).toBe(50);
      expect(await streamMessages(streams.nc, names.stream)).toBe(50);
      const manager = await streams.nc.jetstreamManager();
      const stored: string[] = [];
      for (let sequence = 1; sequence <= 50; sequence += 1) {
        stored.push((await manager.streams.getMessage(names.stream, { seq: sequence })).header.get('Nats-Msg-Id'));
      }
      expect(stored.sort()).toEqual([...ids].sort());
    } finally {
      publisher.close();
      watcher.unsubscribe();
      await proxied.close().catch(() => undefined);
      await proxy.close();
    }
  }, 30_000);
});

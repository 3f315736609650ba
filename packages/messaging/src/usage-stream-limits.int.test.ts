/**
 * The usage stream's limits against a real JetStream: bounded by age and bytes, refusing new events
 * when full (discard: new) rather than deleting unmetered ones, limits changed at a start; and the
 * publisher's side of a full stream: refusals counted by reason, events held and retried, shed as
 * `stream_full` only once the hold is full, and every held event stored once when space comes back.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { connect, DiscardPolicy, nanos, RetentionPolicy, StorageType } from 'nats';
import { createLogger } from '@gateway/logger';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort, hasNatsServer, natsServerBinary, serverProcess, TEST_USAGE_STREAM_MAX_BYTES } from '@gateway/testing';
import { decodeUsageEvent } from './usage-codec.js';
import { UsagePublisher } from './usage-publisher.js';
import { useTestStreams, usageEvent } from './testing/usage-fixtures.js';
import { ensureUsageStream, USAGE_MAX_AGE_MS, USAGE_MAX_BYTES } from './usage-stream.js';

const logger = createLogger('messaging-test', 'silent');

describe('the usage stream limits', () => {
  const streams = useTestStreams();

  it('creates the stream bounded by age and bytes, refusing new events when full, and applies changed limits to it at the next start', async () => {
    const names = streams.names();
    const first = await ensureUsageStream(streams.nc, names);
    expect(first.config).toMatchObject({ max_age: nanos(USAGE_MAX_AGE_MS), max_bytes: USAGE_MAX_BYTES, discard: DiscardPolicy.New });
    expect(USAGE_MAX_AGE_MS).toBe(72 * 3_600_000);

    const changed = await ensureUsageStream(streams.nc, { ...names, maxAgeMs: 24 * 3_600_000, maxBytes: 2 * 1024 * 1024 });
    expect(changed.config).toMatchObject({ max_age: nanos(24 * 3_600_000), max_bytes: 2 * 1024 * 1024, discard: DiscardPolicy.New });
  });

  it('brings a stream made by an earlier version (30 days, no byte limit, discard old) to the bounded configuration at start', async () => {
    const names = streams.names();
    const manager = await streams.nc.jetstreamManager();
    await manager.streams.add({
      name: names.stream,
      subjects: names.subjects,
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: nanos(30 * 24 * 3_600_000),
    });
    const info = await ensureUsageStream(streams.nc, { ...names, maxBytes: 8 * 1024 * 1024 });
    expect(info.config).toMatchObject({ max_age: nanos(USAGE_MAX_AGE_MS), max_bytes: 8 * 1024 * 1024, discard: DiscardPolicy.New });
  });

  it('never lowers max_bytes below what the stream holds at a start, which would delete the oldest events, and says so', async () => {
    const names = streams.names();
    await ensureUsageStream(streams.nc, { ...names, maxBytes: TEST_USAGE_STREAM_MAX_BYTES });
    const subject = names.subjects[0]!.replace('>', 'completion');
    for (let index = 0; index < 30; index += 1) await streams.nc.request(subject, new Uint8Array(200));
    const manager = await streams.nc.jetstreamManager();
    const held = (await manager.streams.info(names.stream)).state.bytes;
    const warnings: Array<{ details: object; message: string }> = [];
    const logger = { warn: (details: object, message: string) => 'requested' in details && 'bytes' in details && warnings.push({ details, message }) };

    const info = await ensureUsageStream(streams.nc, { ...names, maxBytes: 1024, logger });
    expect(info.config.max_bytes).toBe(held);
    expect(info.state).toMatchObject({ messages: 30, first_seq: 1 });
    expect(warnings).toEqual([{ details: { stream: names.stream, bytes: held, requested: 1024 }, message: expect.stringContaining('never lowers max_bytes') }]);
    // The room it holds is all it has: the next event is refused, and none is deleted.
    const answer = JSON.parse(new TextDecoder().decode((await streams.nc.request(subject, new Uint8Array(200))).data)) as { error?: { description?: string } };
    expect(answer.error?.description).toMatch(/maximum bytes exceeded/);
    expect((await manager.streams.info(names.stream)).state).toMatchObject({ messages: 30, first_seq: 1 });
  });

  it('says which variable to change when NATS cannot reserve the max_bytes asked for', async () => {
    const names = streams.names();
    // A petabyte: more than any test server's storage.
    await expect(ensureUsageStream(streams.nc, { ...names, maxBytes: 2 ** 50 })).rejects.toThrow(
      /NATS cannot reserve USAGE_STREAM_MAX_BYTES=1125899906842624 for the usage stream USAGE_TEST_\w+ .*max_file_store/,
    );
  });

  it('holds the events a full stream refuses, counts the refusals, sheds as stream_full only once the hold is full, and stores each held event once when space comes back', async () => {
    const names = streams.names();
    await ensureUsageStream(streams.nc, { ...names, maxBytes: TEST_USAGE_STREAM_MAX_BYTES });
    const maxQueue = 150;
    const publisher = new UsagePublisher(streams.nc, logger, { subject: names.subject, maxBatch: 1, maxQueue, initialBackoffMs: 20, maxBackoffMs: 200 });
    try {
      // One event's size in the stream, then a limit one byte over ten of them. (Servers before
      // 2.10.5 check discard: new against the payload alone, not the stored record, and a limit
      // that a record overshoots makes them drop the oldest instead: see deploy/README.md.)
      publisher.publish(usageEvent(randomUUID()));
      await eventually(() => publisher.published === 1 || undefined, 'the first event to be stored', 10_000, 20);
      const manager = await streams.nc.jetstreamManager();
      const recordBytes = (await manager.streams.info(names.stream)).state.bytes;
      const maxBytes = 10 * recordBytes + 1;
      await ensureUsageStream(streams.nc, { ...names, maxBytes });

      const ids: string[] = Array.from({ length: 100 }, () => randomUUID());
      for (const id of ids) publisher.publish(usageEvent(id));
      await eventually(() => publisher.refusedBy.stream_full > 0 || undefined, 'the full stream to refuse a publish', 10_000, 20);
      const full = await manager.streams.info(names.stream);
      expect(full.state.messages).toBe(10);
      expect(full.state.first_seq).toBe(1);
      // Refused, not dropped: every event not stored is still held.
      await eventually(() => publisher.published === full.state.messages || undefined, 'the stored events to be acknowledged', 10_000, 20);
      expect(publisher.pending).toBe(101 - full.state.messages);
      expect(publisher.dropped).toBe(0);

      // The hold fills: what no longer fits is shed, saying why.
      const more: string[] = Array.from({ length: 100 }, () => randomUUID());
      for (const id of more) publisher.publish(usageEvent(id));
      const accepted = maxQueue + full.state.messages;
      expect(publisher.pending).toBe(maxQueue);
      expect(publisher.droppedBy.stream_full).toBe(201 - accepted);
      expect(publisher.droppedBy.queue_full).toBe(0);

      // Space comes back (an operator raises max_bytes): every held event is stored, once.
      await ensureUsageStream(streams.nc, { ...names, maxBytes: 1024 * 1024 });
      await eventually(() => publisher.pending === 0 || undefined, 'the held events to be stored', 20_000, 50);
      const info = await manager.streams.info(names.stream);
      expect(info.state.messages).toBe(accepted);
      const stored: string[] = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq += 1) {
        stored.push(decodeUsageEvent((await manager.streams.getMessage(names.stream, { seq })).data).event_id!);
      }
      expect(new Set(stored).size).toBe(accepted);
      expect(stored.slice(1).every((id) => ids.includes(id) || more.includes(id))).toBe(true);
      expect(publisher.dropped).toBe(201 - accepted);
    } finally {
      publisher.close();
    }
  });
});

describe.skipIf(!hasNatsServer())('a NATS server out of JetStream storage', () => {
  it('refuses events as storage_full, which the publisher holds and stores once a stream frees room', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'gateway-nats-storage-'));
    const port = await freePort();
    const config = join(directory, 'nats.conf');
    writeFileSync(config, `listen: 127.0.0.1:${port}\njetstream { store_dir: "${join(directory, 'store')}", max_file_store: 256KB, max_memory_store: 64KB }\n`);
    const server = serverProcess(natsServerBinary()!, ['-c', config], port);
    await server.start();
    const nc = await connect({ servers: `nats://127.0.0.1:${port}` });
    const publisher = new UsagePublisher(nc, logger, { subject: 'usage.v1.completion', maxBatch: 1, initialBackoffMs: 20, maxBackoffMs: 200 });
    try {
      const manager = await nc.jetstreamManager();
      // Another stream, without a byte limit of its own, takes the server's storage.
      await manager.streams.add({ name: 'OTHER', subjects: ['other.>'], storage: StorageType.File });
      await ensureUsageStream(nc, { maxBytes: 16 * 1024 });
      for (;;) {
        const answer = JSON.parse(new TextDecoder().decode((await nc.request('other.fill', new Uint8Array(4096))).data)) as { error?: unknown };
        if (answer.error) break;
      }
      const ids: string[] = Array.from({ length: 20 }, () => randomUUID());
      for (const id of ids) publisher.publish(usageEvent(id));
      await eventually(() => publisher.refusedBy.storage_full > 0 || undefined, 'the server to refuse an event for lack of storage', 10_000, 20);
      expect(publisher.refusedBy.stream_full).toBe(0);
      expect(publisher.pending).toBe(20);
      expect(publisher.dropped).toBe(0);

      await manager.streams.purge('OTHER');
      await eventually(() => publisher.pending === 0 || undefined, 'the held events to be stored', 20_000, 50);
      expect((await manager.streams.info('USAGE')).state.messages).toBe(20);
      expect(publisher.dropped).toBe(0);
    } finally {
      publisher.close();
      await nc.close();
      await server.kill('SIGTERM');
      rmSync(directory, { recursive: true, force: true });
    }
  });
});

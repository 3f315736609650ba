/**
 * A 60 s outage of the request log's PostgreSQL (a throwaway server of this file's own, stopped
 * and started again; TLS, verified): the requests of the outage wait, held by the writer and kept
 * from redelivery, and are written as soon as the database answers again, not at the pace of
 * their redelivery delays; none lost, none written twice.
 */
import { randomUUID } from 'node:crypto';
import { encodeUsageEvent, encodeUsageEventBatch } from '@gateway/messaging';
import type { UsageEvent } from '@gateway/proto';
import { eventually, startTlsPostgres, type TlsPostgres } from '@gateway/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from './app.js';
import { databaseClientConfig } from './database-connection.js';
import { migrate } from './migrations.js';
import { startTestRequestLog, type TestRequestLog } from './testing/request-log-service.js';
import { completedUsageEvent, testRequestLogSetting } from './testing/request-log-setting.js';

const setting = testRequestLogSetting('rlout');
const { names, registry, durableName } = setting;
/** The outage. */
const OUTAGE_MS = 60_000;
/**
 * Redelivery delays: a message handed back during the outage would come again 3 s later, and
 * after a second failure 120 s later, long after the database returned. The first, also the time
 * JetStream waits for an acknowledgement, is short so that a message the writer holds for the
 * whole outage is redelivered unless the writer keeps it in progress.
 */
const BACKOFF_MS = [3_000, 120_000];

let server: TlsPostgres;
let pool: pg.Pool;
let service: TestRequestLog;

function event(): UsageEvent {
  return completedUsageEvent('key_OUTAGEOUTAGEOUTA', { latency_ms: 50 });
}

/** Publishes `count` events, one message each and in batches of five; resolves their ids. */
async function publishEvents(count: number): Promise<string[]> {
  const js = service.nc.jetstream();
  const events = Array.from({ length: count }, event);
  for (let index = 0; index < events.length; ) {
    if (index % 10 === 0) {
      const single = events[index]!;
      await js.publish(names.subject, encodeUsageEvent(single), { msgID: single.event_id! });
      index += 1;
    } else {
      const batch = events.slice(index, index + 5);
      await js.publish(names.subject, encodeUsageEventBatch(batch), { msgID: `batch-${randomUUID()}` });
      index += batch.length;
    }
  }
  return events.map((entry) => entry.event_id!);
}

/** How many rows each of these events has (an event absent counts as 0). */
async function rowCounts(eventIds: string[]): Promise<number[]> {
  const { rows } = await pool.query<{ event_id: string; rows: string }>(
    'SELECT event_id, count(*) AS rows FROM request_log WHERE event_id = ANY($1) GROUP BY event_id',
    [eventIds],
  );
  const byId = new Map(rows.map((row) => [row.event_id, Number(row.rows)]));
  return eventIds.map((id) => byId.get(id) ?? 0);
}

async function metricValue(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((entry) => entry.name === name);
  const value = metric?.values.find((entry) => Object.entries(labels).every(([label, wanted]) => entry.labels[label] === wanted));
  return Number(value?.value ?? Number.NaN);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = await startTlsPostgres();
  pool = new pg.Pool({
    ...databaseClientConfig({ url: server.url({ params: { sslmode: 'verify-full' } }), caFile: server.caFile }),
    max: 4,
    connectionTimeoutMillis: 2_000,
  });
  // The outage ends the pool's idle connections: an error the pool reports, not the test.
  pool.on('error', () => undefined);
  await migrate(pool);
  service = await startTestRequestLog({ ...setting.dependencies, pool, aheadDays: 1, backoffMs: BACKOFF_MS, databaseProbeIntervalMs: 500 });
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await pool?.end();
  await server?.close();
}, 60_000);

describe('request log through a PostgreSQL outage', () => {
  it('writes the backlog of a 60 s outage as soon as PostgreSQL answers again, each request once', async () => {
    const before = await publishEvents(10);
    await eventually(async () => (await rowCounts(before)).every((count) => count === 1), 'the requests before the outage to be logged', 20_000);

    await server.stop();
    const outageEnds = Date.now() + OUTAGE_MS;
    const during: string[] = await publishEvents(50);
    // The writer found the database away (a write failed, the probe too) and holds what it has.
    await eventually(async () => (await metricValue('gateway_request_log_database_up')) === 0, 'the writer to find PostgreSQL away', 20_000);
    // Requests keep coming through the outage.
    while (Date.now() < outageEnds - 10_000) {
      await sleep(10_000);
      during.push(...(await publishEvents(30)));
    }
    await sleep(Math.max(0, outageEnds - Date.now()));
    const consumerBefore = await (await service.nc.jetstreamManager()).consumers.info(names.stream, durableName);
    // Held for the whole outage, none was handed back or redelivered.
    expect(consumerBefore.num_redelivered).toBe(0);

    await server.start();
    const returnedAt = Date.now();
    await eventually(async () => (await rowCounts(during)).every((count) => count > 0), 'the requests of the outage to be logged', 90_000, 50);
    const caughtUpMs = Date.now() - returnedAt;

    // Every request once: none lost, none written twice (no duplicate either: no message came twice).
    expect(await rowCounts([...before, ...during])).toEqual([...before, ...during].map(() => 1));
    expect(await metricValue('gateway_request_log_rows_total', { result: 'duplicate' })).toBe(0);
    expect(await metricValue('gateway_request_log_database_up')).toBe(1);
    const manager = await service.nc.jetstreamManager();
    const consumer = await eventually(async () => {
      const info = await manager.consumers.info(names.stream, durableName);
      return info.num_ack_pending === 0 && info.num_pending === 0 ? info : undefined;
    }, 'every message of the outage to be acknowledged');
    expect(consumer.num_redelivered).toBe(0);
    // Written by the writer's probe, not by a redelivery: the earliest a message handed back
    // during the outage could have come again is its second delay after its last failure, a
    // minute after the database returned. (Measured here: about the probe interval.)
    expect(caughtUpMs).toBeLessThan(BACKOFF_MS[1]! - OUTAGE_MS);
    console.info(`request log outage: ${during.length} requests of a ${OUTAGE_MS / 1000} s outage logged ${caughtUpMs} ms after PostgreSQL returned`);
  }, 240_000);

  it('hands what it holds back when it stops during an outage, and the next replica writes each once', async () => {
    await server.stop();
    const held = await publishEvents(20);
    await eventually(async () => (await metricValue('gateway_request_log_database_up')) === 0, 'the writer to find PostgreSQL away', 20_000);
    // A replica stopped while the database is away stops (its shutdown grace would otherwise run
    // out) and hands its messages back rather than waiting for PostgreSQL.
    await service.server.stop();
    await server.start();
    const next = createServer({
      ...setting.dependencies,
      registry: undefined,
      pool,
      nc: service.nc,
      retentionDays: 30,
      maintenanceIntervalMs: 3_600_000,
      batchRows: 50,
      batchDelayMs: 20,
      aheadDays: 1,
      backoffMs: BACKOFF_MS,
      databaseProbeIntervalMs: 500,
    });
    await next.start();
    try {
      await eventually(async () => (await rowCounts(held)).every((count) => count === 1), 'the next replica to log what the first handed back', 30_000);
      expect(await rowCounts(held)).toEqual(held.map(() => 1));
    } finally {
      await next.stop();
    }
  }, 120_000);
});

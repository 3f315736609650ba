/**
 * Request bodies in the request log, against a real PostgreSQL (a database of this run's own) and
 * a real JetStream (streams of their own): bodies published on the bodies stream are one row
 * however often delivered, read with a request's detail only when asked for, and their partitions
 * are dropped at their own retention while the requests' stay.
 */
import { randomUUID } from 'node:crypto';
import { callUnary } from '@gateway/grpc';
import { bodiesNames, encodeRequestBodies, encodeUsageEvent } from '@gateway/messaging';
import type { GetRequestRequest, GetRequestResponseOutput, RequestBodies, RequestLogServiceClient, UsageEvent } from '@gateway/proto';
import { eventually } from '@gateway/testing';
import type { NatsConnection } from 'nats';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestLogServer } from './app.js';
import { DAY_MS, dayOf, listPartitions } from './partitions.js';
import { createTestRequestLogDatabase, startTestRequestLog, type TestRequestLog, type TestRequestLogDatabase } from './testing/request-log-service.js';
import { testRequestLogSetting } from './testing/request-log-setting.js';

const setting = testRequestLogSetting('rb');
const { names, clock } = setting;
const bodiesStream = bodiesNames(names.stream);
const KEY = 'key_AAAAAAAAAAAAAAAA';

let reqlogDatabase: TestRequestLogDatabase;
let pool: pg.Pool;
let nc: NatsConnection;
let service: TestRequestLog;
let server: RequestLogServer;
let client: RequestLogServiceClient;

/** A request's usage event and its bodies, received `agoMs` before now. */
function request(agoMs = 0): { event: UsageEvent; bodies: RequestBodies } {
  const eventId = randomUUID();
  const receivedAtMs = Date.now() - agoMs;
  return {
    event: {
      event_id: eventId,
      request_id: `req-${randomUUID()}`,
      key_id: KEY,
      model_id: 'sim-mini',
      requested_model: 'sim-mini',
      provider: 'simulated',
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      received_at_ms: receivedAtMs,
      latency_ms: 20,
      outcome: 'OUTCOME_COMPLETED',
      api: 'chat_completions',
      http_status: 200,
    },
    bodies: {
      event_id: eventId,
      received_at_ms: receivedAtMs,
      key_id: KEY,
      request: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: `héllo ${eventId}` }] }),
      response: JSON.stringify({ choices: [{ message: { role: 'assistant', content: 'hi' } }] }),
      request_truncated_bytes: 0,
      response_truncated_bytes: 1234,
    },
  };
}

async function publish(entry: { event: UsageEvent; bodies: RequestBodies }, bodiesTimes = 1): Promise<void> {
  const js = nc.jetstream();
  await js.publish(names.subject, encodeUsageEvent(entry.event), { msgID: entry.event.event_id! });
  // Delivered again under another message id (an edge publishing twice): JetStream cannot de-duplicate it, the table must.
  for (let time = 0; time < bodiesTimes; time += 1)
    await js.publish(bodiesStream.subject, encodeRequestBodies(entry.bodies), { msgID: `${entry.event.event_id}-${time}` });
}

const get = (requestId: string, includeBodies: boolean) =>
  callUnary<GetRequestRequest, GetRequestResponseOutput>(client, client.GetRequest, { id: requestId, include_bodies: includeBodies }, { deadlineMs: 5_000 });

const bodyRowsOf = async (eventId: string) =>
  (await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM request_bodies WHERE event_id = $1', [eventId])).rows[0]!.count;
const requestRowsOf = async (eventId: string) =>
  (await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM request_log WHERE event_id = $1', [eventId])).rows[0]!.count;

beforeAll(async () => {
  reqlogDatabase = await createTestRequestLogDatabase(4);
  ({ pool } = reqlogDatabase);
  service = await startTestRequestLog({ ...setting.dependencies, pool, bodyRetentionDays: 7, aheadDays: 1, bodiesMaxBytes: 8 * 1024 * 1024 });
  ({ server, nc, client } = service);
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await reqlogDatabase?.drop();
}, 30_000);

describe('request bodies', () => {
  it('keeps one row of bodies per request however often delivered, and returns them with the detail only when asked', async () => {
    const one = request();
    await publish(one, 3);
    await eventually(
      async () => (await requestRowsOf(one.event.event_id!)) === 1 && (await bodyRowsOf(one.event.event_id!)) === 1,
      'the request and its bodies',
      15_000,
    );
    // Every delivery handled (acknowledged after its commit), and still one row.
    await eventually(async () => {
      const info = await (await nc.jetstreamManager()).consumers.info(bodiesStream.stream, setting.durableName);
      return info.num_pending + info.num_ack_pending === 0;
    }, 'every delivery of the bodies acknowledged');
    expect(await bodyRowsOf(one.event.event_id!)).toBe(1);

    const withBodies = await get(one.event.event_id!, true);
    expect(withBodies.bodies).toMatchObject({
      event_id: one.event.event_id,
      request: one.bodies.request,
      response: one.bodies.response,
      request_truncated_bytes: 0,
      response_truncated_bytes: 1234,
    });
    // By the request id too, and without bodies when not asked.
    expect((await get(one.event.request_id!, true)).bodies?.request).toBe(one.bodies.request);
    const without = await get(one.event.event_id!, false);
    expect(without.request?.event_id).toBe(one.event.event_id);
    expect(without.bodies ?? undefined).toBeUndefined();
  }, 30_000);

  it('answers a request without bodies with none', async () => {
    const plain = request();
    await nc.jetstream().publish(names.subject, encodeUsageEvent(plain.event), { msgID: plain.event.event_id! });
    await eventually(async () => (await requestRowsOf(plain.event.event_id!)) === 1, 'the request', 15_000);
    const answer = await get(plain.event.event_id!, true);
    expect(answer.request?.event_id).toBe(plain.event.event_id);
    expect(answer.bodies ?? undefined).toBeUndefined();
  }, 30_000);

  it("drops the bodies' partitions at their own retention while the requests of those days stay", async () => {
    const old = request(5 * DAY_MS);
    await publish(old);
    await eventually(
      async () => (await bodyRowsOf(old.event.event_id!)) === 1 && (await requestRowsOf(old.event.event_id!)) === 1,
      'the old request and its bodies',
      15_000,
    );
    const oldDay = dayOf(Number(old.event.received_at_ms));
    expect(await listPartitions(pool, 'request_bodies')).toContain(oldDay);

    // Ten days on: past the bodies' seven days, within the requests' thirty.
    clock.offsetMs = 5 * DAY_MS;
    try {
      const done = await server.maintain();
      expect(done.bodies.dropped).toContain(oldDay);
      expect(done.dropped).not.toContain(oldDay);
      expect(await listPartitions(pool, 'request_bodies')).not.toContain(oldDay);
      expect(await listPartitions(pool)).toContain(oldDay);
      expect(await requestRowsOf(old.event.event_id!)).toBe(1);
      const answer = await get(old.event.event_id!, true);
      expect(answer.request?.event_id).toBe(old.event.event_id);
      expect(answer.bodies ?? undefined).toBeUndefined();
    } finally {
      clock.offsetMs = 0;
    }
  }, 30_000);
});

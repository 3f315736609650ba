/**
 * The NATS outage drill, against a running cluster on a NATS server of the test's own (JetStream,
 * its own port and store directory, so it can be stopped without disturbing anyone else): at low
 * traffic (a request now and then), NATS stops for several turns of the "held too long" threshold.
 * Meanwhile the inputs of the outage alerts show it: the edge's and metering's NATS connection
 * gauges read 0, the age of the edge's oldest held event grows turn after turn (while it holds only
 * a handful), and metering's lag reads unknown (NaN) with the time of its last reading standing
 * still. An edge is rolled while NATS is still down (a new one started, the old one sent SIGTERM):
 * the old one hands its held events to metering, which meters them without NATS. The new one holds
 * its own until they have been held its EDGE_USAGE_HANDOVER_AFTER_MS, then hands them over too.
 * NATS comes back, the new edge publishes what it still held, and every answered request is metered
 * exactly once: the usage API counts the answers.
 *
 * The alerts fire on these gauges after minutes (deploy/components/alerts, unit-tested by
 * promtool); here the threshold is seconds, HELD_TOO_LONG_SECONDS, and the outage lasts several of
 * them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePort, natsServerBinary, serverProcess, type ServerProcess } from '@gateway/testing';
import { metric, metricReaches, startCluster, startSecondEdge, stopProcess, type Cluster } from './cluster.js';

/** The drill's stand-in for the alert's 5 minutes an event may be held: the outage lasts several turns of it. */
const HELD_TOO_LONG_SECONDS = 3;
/** Turns of the threshold the outage lasts before the edge is rolled. */
const TURNS = 4;
/** The new edge's EDGE_USAGE_HANDOVER_AFTER_MS, in seconds: two turns of the threshold. */
const HANDOVER_AFTER_SECONDS = 2 * HELD_TOO_LONG_SECONDS;

let cluster: Cluster;
let nats: ServerProcess;
let directory: string;
const cleanups: Array<() => Promise<unknown>> = [];

/** Answered requests (200s), by the edge that answered them. */
let answered = 0;

async function complete(baseUrl: string): Promise<void> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'hello' }] }),
    signal: AbortSignal.timeout(20_000),
  });
  await response.arrayBuffer();
  expect(response.status).toBe(200);
  answered += 1;
}

/** Requests metered for the cluster's key, as its usage API reports them. */
async function usageApiRequests(baseUrl: string): Promise<number> {
  const since = Math.floor(Date.now() / 1000) - 3_600;
  const response = await fetch(`${baseUrl}/usage?start=${since}&bucket=hour`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { totals: { requests: number } }).totals.requests;
}

beforeAll(async () => {
  const binary = natsServerBinary();
  if (!binary) throw new Error('nats-server is not installed: apt-get install nats-server');
  directory = mkdtempSync(join(tmpdir(), 'nats-outage-'));
  const port = await freePort();
  const config = join(directory, 'nats.conf');
  writeFileSync(config, `listen: 127.0.0.1:${port}\njetstream { store_dir: "${join(directory, 'store')}" }\n`);
  nats = serverProcess(binary, ['-c', config], port);
  await nats.start();
  cluster = await startCluster({ env: { NATS_URL: `nats://127.0.0.1:${port}` } });
}, 90_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  if (nats && !nats.running) await nats.start().catch(() => undefined);
  await cluster?.stop();
  await nats?.kill('SIGTERM');
  if (directory) rmSync(directory, { recursive: true, force: true });
});

describe('a NATS outage at low traffic', () => {
  it('shows on the alerts inputs for its whole length, and loses no usage event across an edge rollout', async () => {
    const edgeMetrics = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
    const meteringMetrics = `http://127.0.0.1:${cluster.ports.meteringMetrics}/metrics`;

    // Before: connected, nothing held, the lag known and fresh.
    for (let index = 0; index < 3; index += 1) await complete(cluster.baseUrl);
    expect(await metric(edgeMetrics, 'gateway_nats_connected')).toBe(1);
    expect(await metric(meteringMetrics, 'gateway_nats_connected')).toBe(1);
    await metricReaches(edgeMetrics, 'gateway_usage_events_held', 0, 'the first events to reach the stream', 10_000, 100);
    expect(await metric(edgeMetrics, 'gateway_usage_oldest_held_event_age_seconds')).toBe(0);
    await metricReaches(meteringMetrics, 'gateway_metering_consumer_pending_messages', 0, 'metering to have read a lag of 0', 15_000);

    // NATS stops. Every process notices at once: the connection closes under it.
    await nats.kill('SIGTERM');
    await eventually(
      async () => ((await metric(edgeMetrics, 'gateway_nats_connected')) === 0 && (await metric(meteringMetrics, 'gateway_nats_connected')) === 0) || undefined,
      'the edge and metering to report NATS unreachable',
      10_000,
      100,
    );
    await complete(cluster.baseUrl);
    // Metering's next reading fails: the lag is unknown, and when it was last read stands still.
    await eventually(
      async () => Number.isNaN(await metric(meteringMetrics, 'gateway_metering_consumer_pending_messages')) || undefined,
      "metering's lag to read unknown",
      15_000,
      200,
    );
    expect(await metric(meteringMetrics, 'gateway_metering_oldest_unmetered_age_seconds')).toBeNaN();
    const lastRead = await metric(meteringMetrics, 'gateway_metering_lag_last_read_timestamp_seconds');

    // Low traffic for several turns of the threshold: a request each turn, so the edge holds only a
    // few events, and their age crosses one more turn each time.
    for (let turn = 1; turn <= TURNS; turn += 1) {
      const age = await eventually(
        async () => {
          const value = await metric(edgeMetrics, 'gateway_usage_oldest_held_event_age_seconds');
          return value > turn * HELD_TOO_LONG_SECONDS ? value : undefined;
        },
        `the oldest held event to be held over ${turn} turn(s) of the threshold`,
        (HELD_TOO_LONG_SECONDS + 10) * 1000,
        250,
      );
      expect(age).toBeGreaterThan(turn * HELD_TOO_LONG_SECONDS);
      expect(await metric(edgeMetrics, 'gateway_nats_connected')).toBe(0);
      expect(await metric(meteringMetrics, 'gateway_nats_connected')).toBe(0);
      expect(await metric(meteringMetrics, 'gateway_metering_consumer_pending_messages')).toBeNaN();
      expect(await metric(meteringMetrics, 'gateway_metering_lag_last_read_timestamp_seconds')).toBe(lastRead);
      await complete(cluster.baseUrl);
    }
    expect(await metric(edgeMetrics, 'gateway_usage_events_held')).toBe(TURNS + 1);
    expect(Date.now() / 1000 - lastRead).toBeGreaterThan(TURNS * HELD_TOO_LONG_SECONDS);
    expect(await metric(edgeMetrics, 'gateway_usage_events_dropped_total')).toBe(0);

    // The rollout, NATS still down: a new edge first, then SIGTERM to the old one, which hands its
    // held events to metering. Metering meters them without NATS: the usage API counts every
    // request the old edge answered.
    const newEdgeMetrics = `http://127.0.0.1:${await freePort()}/metrics`;
    const edge = await startSecondEdge(cluster, {
      EDGE_METRICS_PORT: new URL(newEdgeMetrics).port,
      EDGE_USAGE_HANDOVER_AFTER_MS: String(HANDOVER_AFTER_SECONDS * 1000),
    });
    cleanups.push(() => edge.stop());
    await stopProcess(cluster.processes.edge);
    expect(cluster.processes.edge.exitCode).toBe(0);
    expect(await usageApiRequests(edge.baseUrl)).toBe(answered);
    expect(cluster.logs.edge.join('')).toContain('handed to metering at shutdown');

    // The new edge serves on and holds its events while NATS is down, until they have been held
    // EDGE_USAGE_HANDOVER_AFTER_MS: then it hands them to metering, NATS still down.
    const answeredByOldEdge = answered;
    for (let index = 0; index < 3; index += 1) await complete(edge.baseUrl);
    expect(await metric(newEdgeMetrics, 'gateway_nats_connected')).toBe(0);
    expect(await metric(newEdgeMetrics, 'gateway_usage_events_held')).toBe(3);
    expect(await usageApiRequests(edge.baseUrl)).toBe(answeredByOldEdge);
    await metricReaches(
      newEdgeMetrics,
      'gateway_usage_events_handed_over_total',
      3,
      'the new edge to hand over the events it held too long',
      (HANDOVER_AFTER_SECONDS + 15) * 1000,
    );
    expect(await metric(newEdgeMetrics, 'gateway_usage_events_held')).toBe(0);
    expect(await usageApiRequests(edge.baseUrl)).toBe(answered);
    // One more, held when NATS returns: it goes through the stream.
    await complete(edge.baseUrl);
    expect(await metric(newEdgeMetrics, 'gateway_usage_events_held')).toBe(1);

    // NATS back, on the same store: the new edge publishes what it held, metering consumes it and
    // reads its lag again, and every answered request is metered exactly once.
    await nats.start();
    await eventually(
      async () => (await metric(meteringMetrics, 'gateway_metering_lag_last_read_timestamp_seconds')) > lastRead || undefined,
      'metering to read its lag again',
      30_000,
      200,
    );
    await eventually(async () => (await usageApiRequests(edge.baseUrl)) >= answered || undefined, 'every answered request to be metered', 30_000, 200);
    await metricReaches(meteringMetrics, 'gateway_metering_consumer_pending_messages', 0, 'the lag to go back to 0', 30_000);
    expect(await metric(meteringMetrics, 'gateway_nats_connected')).toBe(1);
    expect(await metric(newEdgeMetrics, 'gateway_nats_connected')).toBe(1);
    expect(await metric(newEdgeMetrics, 'gateway_usage_events_held')).toBe(0);
    expect(await metric(newEdgeMetrics, 'gateway_usage_oldest_held_event_age_seconds')).toBe(0);
    expect(await metric(newEdgeMetrics, 'gateway_usage_events_handed_over_total')).toBe(3);
    // Nothing left on its way, nothing counted twice.
    expect(await usageApiRequests(edge.baseUrl)).toBe(answered);
    expect(await metric(meteringMetrics, 'gateway_metering_poison_messages_total')).toBe(0);
  }, 180_000);
});

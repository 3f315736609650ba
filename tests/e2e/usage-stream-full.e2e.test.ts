/**
 * The drill of a full usage stream, through the real edge and metering, on a NATS server of its own
 * with a small JetStream storage (max_file_store) and a usage stream of 128 KiB
 * (USAGE_STREAM_MAX_BYTES): under load the stream fills and JetStream refuses publishes; every
 * request is still answered, the edge holds what was refused (nothing dropped) across several
 * rounds of its retry backoff, and the inputs of the alerts GatewayUsageStreamFull (the edge's
 * gateway_usage_events_refused_total{reason="stream_full"}) and GatewayUsageStreamNearlyFull
 * (metering's gateway_usage_stream_bytes over gateway_usage_stream_max_bytes) show it. Then space
 * frees as an operator frees it: USAGE_STREAM_MAX_BYTES is raised and metering restarted, which
 * applies it to the stream at start (the stream keeps metered events for their retention, so
 * metering catching up frees nothing: see deploy/README.md). The edge delivers what it held, and
 * the usage API counts every answered request exactly once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePort, hasNatsServer, natsServerBinary, serverProcess, type ServerProcess } from '@gateway/testing';
import { metric, metricReaches, startCluster, stopProcess, type Cluster } from './cluster.js';
import { startChatLoad } from './chat-load.js';

/**
 * The stream's limit during the drill: 128 KiB, a few hundred events, filled in seconds. (Servers
 * before 2.10.5, Debian's included, can still drop the oldest event near the limit despite discard:
 * new; a stream seconds deep keeps those long metered by then.)
 */
const SMALL_MAX_BYTES = 128 * 1024;
/** The limit an operator raises it to once the alert fires. */
const RAISED_MAX_BYTES = 16 * 1024 * 1024;

interface Answer {
  usage: { prompt_tokens: number; completion_tokens: number };
  gateway: { cost_usd: number };
}

describe.skipIf(!hasNatsServer())('the usage stream at a small max_bytes, filled under load', () => {
  let directory: string;
  let nats: ServerProcess;
  let cluster: Cluster;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'gateway-stream-full-'));
    const port = await freePort();
    const config = join(directory, 'nats.conf');
    writeFileSync(config, `listen: 127.0.0.1:${port}\njetstream { store_dir: "${join(directory, 'store')}", max_file_store: 64MB, max_memory_store: 16MB }\n`);
    nats = serverProcess(natsServerBinary()!, ['-c', config], port);
    await nats.start();
    cluster = await startCluster({ env: { NATS_URL: `nats://127.0.0.1:${port}`, USAGE_STREAM_MAX_BYTES: String(SMALL_MAX_BYTES) } });
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    await nats?.kill('SIGTERM');
    rmSync(directory, { recursive: true, force: true });
  });

  it('answers every request while the full stream refuses, holds every event across several retry rounds, and meters each answered request once after max_bytes is raised', async () => {
    const edgeMetrics = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
    const meteringMetrics = `http://127.0.0.1:${cluster.ports.meteringMetrics}/metrics`;
    const stream = { stream: cluster.usageStream };
    const since = Math.floor(Date.now() / 1000) - 3_600;

    const load = startChatLoad<Answer>(cluster, { clients: 8, content: 'Name three lighthouses.', timeoutMs: 15_000 });
    try {
      // The stream fills and refuses: the edge's refusals counted, metering's gauges at the limit.
      await eventually(
        async () => (await metric(edgeMetrics, 'gateway_usage_events_refused_total', { reason: 'stream_full' })) > 0 || undefined,
        'the full stream to refuse a publish',
        60_000,
        200,
      );
      const storage = await eventually(
        async () => {
          const bytes = await metric(meteringMetrics, 'gateway_usage_stream_bytes', stream);
          const maxBytes = await metric(meteringMetrics, 'gateway_usage_stream_max_bytes', stream);
          return maxBytes === SMALL_MAX_BYTES && bytes / maxBytes > 0.8 ? { bytes, maxBytes } : undefined;
        },
        "metering's gauges to show the stream over 80% of its max_bytes",
        30_000,
        250,
      );
      expect(storage.bytes).toBeLessThanOrEqual(SMALL_MAX_BYTES);

      // Held, not dropped, across several rounds of the edge's retries (100 ms doubling to 5 s):
      // the refusals keep rising, from one round to the next, while events stay held.
      let rounds = 0;
      let lastRefused = await metric(edgeMetrics, 'gateway_usage_events_refused_total', { reason: 'stream_full' });
      await eventually(
        async () => {
          const refused = await metric(edgeMetrics, 'gateway_usage_events_refused_total', { reason: 'stream_full' });
          if (refused > lastRefused) rounds += 1;
          lastRefused = refused;
          return rounds >= 4 || undefined;
        },
        'four more rounds of refused retries',
        60_000,
        300,
      );
      expect(await metric(edgeMetrics, 'gateway_usage_events_held')).toBeGreaterThan(0);
      expect(await metric(edgeMetrics, 'gateway_usage_events_dropped_total')).toBe(0);
      const { answers, statuses } = await load.stop();
      // Every request was answered: a full stream costs the bill its timeliness, never a request.
      expect([...statuses.keys()]).toEqual([200]);
      expect(answers.length).toBeGreaterThan(0);
      expect(await metric(edgeMetrics, 'gateway_usage_events_held')).toBeGreaterThan(0);

      // Space frees as an operator frees it: USAGE_STREAM_MAX_BYTES raised, metering restarted.
      cluster.env.USAGE_STREAM_MAX_BYTES = String(RAISED_MAX_BYTES);
      await stopProcess(cluster.processes.metering);
      cluster.restart('metering');
      await eventually(
        async () => (await metric(edgeMetrics, 'gateway_usage_events_held')) === 0 || undefined,
        'the edge to deliver every event it held',
        60_000,
        250,
      );
      await eventually(
        async () => (await metric(meteringMetrics, 'gateway_usage_stream_max_bytes', stream).catch(() => 0)) === RAISED_MAX_BYTES || undefined,
        "metering's gauge to show the raised max_bytes",
        30_000,
        250,
      );

      // Metered exactly once: the usage API's totals equal the answers, and stay so.
      const expected = {
        requests: answers.length,
        prompt_tokens: answers.reduce((sum, answer) => sum + answer.usage.prompt_tokens, 0),
        completion_tokens: answers.reduce((sum, answer) => sum + answer.usage.completion_tokens, 0),
      };
      const usage = async () => {
        const response = await fetch(`${cluster.baseUrl}/usage?start=${since}&bucket=hour`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
        if (response.status !== 200) return undefined;
        return ((await response.json()) as { totals: { requests: number; prompt_tokens: number; completion_tokens: number; cost_usd: number } }).totals;
      };
      const totals = await eventually(
        async () => {
          const current = await usage();
          return current && current.requests >= expected.requests ? current : undefined;
        },
        'the usage API to count every answered request',
        60_000,
        250,
      );
      expect(totals).toMatchObject(expected);
      expect(totals.cost_usd).toBeCloseTo(
        answers.reduce((sum, answer) => sum + answer.gateway.cost_usd, 0),
        9,
      );
      expect(await metric(edgeMetrics, 'gateway_usage_events_dropped_total')).toBe(0);
      await metricReaches(meteringMetrics, 'gateway_metering_consumer_pending_messages', 0, 'metering to have acknowledged every message', 30_000, 250);
      expect(await usage()).toMatchObject(expected);
    } finally {
      await load.stop();
    }
  }, 240_000);
});

/**
 * The usage stream's use as metering reports it, read from a real JetStream: its bytes, messages
 * and max_bytes as the stream fills, and no value at all while the stream cannot be read (so that
 * an outage never looks like a stream that stopped filling).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { createLogger } from '@gateway/logger';
import { ensureUsageStream } from '@gateway/messaging';
import { createRegistry } from '@gateway/observability';
import { natsServers, natsUrl } from '@gateway/testing';
import { createUsageStreamUse } from './usage-stream-use.js';

const logger = createLogger('usage-stream-use-test', 'silent');
const id = randomUUID().replaceAll('-', '');
const names = { stream: `USAGE_USE_${id}`, subjects: [`use.${id}.usage.v1.>`] };
const MAX_BYTES = 64 * 1024;

/** The exposition's value of a metric for this test's stream, or undefined when it is not exported. */
async function sample(registry: ReturnType<typeof createRegistry>, name: string): Promise<number | undefined> {
  const line = (await registry.metrics()).split('\n').find((candidate) => candidate.startsWith(`${name}{`) && candidate.includes(`stream="${names.stream}"`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe("metering's usage stream gauges", () => {
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connect({ servers: natsServers(await natsUrl()) });
  });

  afterAll(async () => {
    await (await nc.jetstreamManager()).streams.delete(names.stream).catch(() => undefined);
    await nc.drain();
  });

  it('report the stream filling towards its max_bytes, and are absent while the stream cannot be read', async () => {
    const registry = createRegistry('usage-stream-use-test');
    const use = createUsageStreamUse({ nc, stream: names.stream, logger, registry });

    // No stream yet: nothing to report, rather than zeros.
    expect(await use.poll()).toBeUndefined();
    expect(await sample(registry, 'gateway_usage_stream_bytes')).toBeUndefined();

    await ensureUsageStream(nc, { ...names, maxBytes: MAX_BYTES });
    for (let index = 0; index < 50; index += 1) await nc.request(`use.${id}.usage.v1.completion`, new Uint8Array(200));
    const reading = await use.poll();
    expect(reading).toMatchObject({ messages: 50, maxBytes: MAX_BYTES });
    expect(reading!.bytes).toBeGreaterThan(50 * 200);
    expect(await sample(registry, 'gateway_usage_stream_bytes')).toBe(reading!.bytes);
    expect(await sample(registry, 'gateway_usage_stream_messages')).toBe(50);
    expect(await sample(registry, 'gateway_usage_stream_max_bytes')).toBe(MAX_BYTES);

    // The stream gone (as while NATS is unreachable): the gauges go with it.
    await (await nc.jetstreamManager()).streams.delete(names.stream);
    expect(await use.poll()).toBeUndefined();
    expect(await sample(registry, 'gateway_usage_stream_bytes')).toBeUndefined();
    expect(await sample(registry, 'gateway_usage_stream_max_bytes')).toBeUndefined();
  });
});

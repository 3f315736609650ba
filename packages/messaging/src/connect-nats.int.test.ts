import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { eventually, natsUrl, startTcpProxy } from '@gateway/testing';
import { connectNats } from './connect-nats.js';

const logger = createLogger('connect-nats-test', 'silent');

/** `gateway_nats_connected` as the registry exports it, or undefined when it is not there. */
async function connected(registry: prometheus.Registry): Promise<number | undefined> {
  const line = (await registry.metrics()).split('\n').find((candidate) => candidate.startsWith('gateway_nats_connected'));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('connectNats', () => {
  it("exports gateway_nats_connected on the service's registry: 0 before the first connection and while NATS is away, 1 while connected", async () => {
    const target = new URL(await natsUrl());
    // A port where NATS does not answer yet: the first connection waits for it.
    const away = await startTcpProxy(0, target.hostname, Number(target.port));
    await away.close();
    const registry = new prometheus.Registry();
    const connection = connectNats(`nats://127.0.0.1:${away.port}`, 'connect-nats-test', logger, registry);
    expect(await connected(registry)).toBe(0);

    let proxy = await startTcpProxy(away.port, target.hostname, Number(target.port));
    const nc = await connection;
    try {
      await eventually(async () => (await connected(registry)) === 1 || undefined, 'the gauge to read 1 once connected', 10_000);
      await proxy.close();
      await eventually(async () => (await connected(registry)) === 0 || undefined, 'the gauge to read 0 once NATS is unreachable', 10_000);
      proxy = await startTcpProxy(away.port, target.hostname, Number(target.port));
      await eventually(async () => (await connected(registry)) === 1 || undefined, 'the gauge to read 1 once reconnected', 15_000);
      await nc.close();
      await eventually(async () => (await connected(registry)) === 0 || undefined, 'the gauge to read 0 once the connection is closed', 5_000);
    } finally {
      await nc.close().catch(() => undefined);
      await proxy.close();
    }
  });

  it('registers nothing without a registry', async () => {
    const registry = new prometheus.Registry();
    const nc = await connectNats(await natsUrl(), 'connect-nats-test', logger);
    try {
      expect(await connected(registry)).toBeUndefined();
    } finally {
      await nc.close();
    }
  });
});

/**
 * ReplicaWaiter against a real master and replica (Debian's redis-server, started here): a write
 * the replica has resolves true; with the replica gone each wait is over within its bound, and
 * the next ones resolve at once without blocking the connection (the writes behind them are not
 * held), until the replica is back.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freePort, hasRedisServer, serverProcess, type ServerProcess } from '@gateway/testing';
import { Redis } from 'ioredis';
import { ReplicaWaiter } from './replica-waiter.js';

describe.skipIf(!hasRedisServer())('ReplicaWaiter', () => {
  let master: ServerProcess;
  let replica: ServerProcess;
  let client: Redis;
  let replicaPort: number;

  const redisArgs = (port: number, extra: string[] = []) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    mkdtempSync(join(tmpdir(), 'replica-waiter-')),
    ...extra,
  ];

  beforeAll(async () => {
    const masterPort = await freePort();
    replicaPort = await freePort();
    master = serverProcess('redis-server', redisArgs(masterPort), masterPort);
    replica = serverProcess('redis-server', redisArgs(replicaPort, ['--replicaof', '127.0.0.1', String(masterPort)]), replicaPort);
    await master.start();
    await replica.start();
    client = new Redis({ port: masterPort, host: '127.0.0.1', commandTimeout: 3_000 });
    await eventually(async () => (/slave0:.*state=online/.test(await client.info('replication')) ? true : undefined), 'the replica to be in sync', 10_000, 50);
  });

  afterAll(async () => {
    client?.disconnect();
    await replica?.kill();
    await master?.kill();
  });

  it('resolves true once the replica has the writes, false within its bound without one, and waits again once it is back', async () => {
    // A bound with room for a busy machine's replica, and well under the command timeout.
    const waiter = new ReplicaWaiter(client, { replicas: 1, timeoutMs: 1_000, quietMs: 1_000 });
    await client.set('{a}:one', '1');
    expect(await waiter.wait('{a}:one')).toBe(true);
    // Concurrent writers share the WAITs: every one resolves.
    const many = await Promise.all(
      Array.from({ length: 50 }, async (_, index) => {
        await client.set(`{a}:${index}`, String(index));
        return waiter.wait(`{a}:${index}`);
      }),
    );
    expect(many.every(Boolean)).toBe(true);

    await replica.kill();
    await eventually(async () => ((await client.info('replication')).includes('connected_slaves:0') ? true : undefined), 'the replica to be gone', 10_000, 50);
    // Bounded under the 3 s command timeout: false, not a timed-out command.
    await client.set('{a}:two', '2');
    expect(await waiter.wait('{a}:two')).toBe(false);
    // Known to lack its replica: 200 writes, each with its wait, none held behind a WAIT (a write
    // queued behind WAITs would run past the command timeout and reject).
    const unreplicated = await Promise.all(
      Array.from({ length: 200 }, async (_, index) => {
        await client.set(`{a}:gone:${index}`, String(index));
        return waiter.wait(`{a}:gone:${index}`);
      }),
    );
    expect(unreplicated.every((replicated) => replicated === false)).toBe(true);

    await replica.start();
    await eventually(async () => ((await client.info('replication')).includes('connected_slaves:1') ? true : undefined), 'the replica to be back', 10_000, 50);
    await eventually(
      async () => {
        await client.set('{a}:three', '3');
        return (await waiter.wait('{a}:three')) || undefined;
      },
      'writes to be replicated again',
      10_000,
      100,
    );
  });

  it('waits for nothing when no replica is asked for', async () => {
    expect(await new ReplicaWaiter(client, { replicas: 0 }).wait('{a}:x')).toBe(true);
  });
});

/**
 * Two replicas of the batch service on one database share a batch of 300 lines; one dies midway
 * (its lane abandoned, its server cut, its leases left): the other finishes the batch, each line
 * once in the output. The edge sees a line twice only when the dead replica was sending it (its
 * lease expired while in flight). A replica stopped as on SIGTERM hands its lines back at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchInfoOutput } from '@gateway/proto';
import { createTestDatabase, eventually, type TestDatabase } from '@gateway/testing';
import { batchFile, call, createBatch, jsonLines, newOwner, readFile, type Replica, startFakeEdge, startReplica, upload } from './testing/harness.js';

let database: TestDatabase;
let edge: Awaited<ReturnType<typeof startFakeEdge>>;
const replicas: Replica[] = [];

beforeAll(async () => {
  database = await createTestDatabase('batch_test');
  edge = await startFakeEdge(async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    return false;
  });
});

afterAll(async () => {
  await Promise.all(replicas.map((replica) => replica.close().catch(() => {})));
  await edge?.close();
  await database?.drop();
});

const finished = (replica: Replica, owner: object, id: string) =>
  eventually(
    async () => {
      const batch = await call<Required<BatchInfoOutput>>(replica.client, 'GetBatch', { owner, batch_id: id });
      return batch.status === 'completed' && batch;
    },
    `batch ${id} completed`,
    30_000,
  );

describe('two replicas', () => {
  it('share a batch; when one dies the other finishes it, each line once in the output', async () => {
    const options = { laneConcurrency: 6, leaseMs: 1_000 };
    const [first, second] = await Promise.all([startReplica(database.url, edge.url, options), startReplica(database.url, edge.url, options)]);
    replicas.push(second!);
    const owner = newOwner();
    const ids = Array.from({ length: 300 }, (_, index) => `r-${index}`);
    const file = await upload(first!.client, owner, batchFile(ids));
    const created = await createBatch(first!.client, owner, file.id);
    await eventually(() => edge.seen.filter((request) => request.batchId === created.id).length >= 60, 'a fifth of the lines sent', 10_000);
    await first!.abandon();
    const batch = await finished(second!, owner, created.id);
    expect(batch.request_counts).toEqual({ total: 300, completed: 300, failed: 0 });
    const output = jsonLines((await readFile(second!.client, owner, batch.output_file_id)).content);
    expect(output.map((line) => line.custom_id)).toEqual(ids);
    const times = new Map<string, number>();
    for (const request of edge.seen.filter((item) => item.batchId === created.id)) times.set(request.customId, (times.get(request.customId) ?? 0) + 1);
    expect(times.size).toBe(300);
    const twice = [...times.values()].filter((count) => count > 1);
    // Only the lines the dead replica held in flight (at most its concurrency) were sent again.
    expect(twice.every((count) => count === 2)).toBe(true);
    expect(twice.length).toBeLessThanOrEqual(6);
  });

  it('hands the lines in flight back on a graceful stop, for another replica to take at once', async () => {
    const options = { laneConcurrency: 4, leaseMs: 60_000, replica: 'stopping-replica' };
    const stopping = await startReplica(database.url, edge.url, options);
    const owner = newOwner();
    const ids = Array.from({ length: 40 }, (_, index) => `g-${index}`);
    const file = await upload(stopping.client, owner, batchFile(ids));
    const created = await createBatch(stopping.client, owner, file.id);
    await eventually(() => edge.seen.some((request) => request.batchId === created.id), 'a line sent');
    await stopping.close(0);
    const { rows } = await replicas[0]!.pool.query(
      "SELECT count(*)::int AS held FROM batch.batch_lines WHERE batch_id = $1 AND status = 'running' AND claimed_by = 'stopping-replica'",
      [created.id],
    );
    expect(rows[0].held).toBe(0);
    // The lease is a minute: only lines handed back can be finished this soon.
    const batch = await finished(replicas[0]!, owner, created.id);
    expect(batch.request_counts).toEqual({ total: 40, completed: 40, failed: 0 });
  });
});

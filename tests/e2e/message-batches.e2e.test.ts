/**
 * Anthropic's Message Batches API in a running cluster with the batch service, as a user's official
 * `@anthropic-ai/sdk` client meets it: a batch of 100 requests to `sim-mini` created inline, polled
 * until `ended`, and its results iterated (each request once, each `succeeded` with a message that
 * has content); a batch of slow requests cancelled until `ended` with `canceled` requests; a
 * malformed request (no `max_tokens`) `errored` in the results as Anthropic answers it, its
 * neighbour `succeeded`; another key reading, cancelling, reading the results of or deleting the
 * first key's batch answered 404 (`not_found_error`); and an ended batch deleted.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createKey } from './admin-keys.js';
import { type Cluster, SIM_MINI_ENTRY, simulatedEntry, startCluster, writeCatalog } from './cluster.js';

const ADMIN_TOKEN = 'message-batches-e2e-admin-token-0123456789';
const REQUESTS = 100;
/** A model slow enough that a batch of it is still running when it is cancelled. */
const SLOW_MODEL = 'sim-slow';

let cluster: Cluster;
let client: Anthropic;
/** The first batch, once ended. */
let batchId: string;

const origin = () => cluster.baseUrl.replace(/\/v1$/, '');

/** `count` requests for `model`, custom ids `request-<n>`. */
function requests(count: number, model: string): Anthropic.Messages.Batches.BatchCreateParams.Request[] {
  return Array.from({ length: count }, (_, index) => ({
    custom_id: `request-${index}`,
    params: { model, max_tokens: 16, messages: [{ role: 'user' as const, content: `Say the number ${index}.` }] },
  }));
}

/** Polls the batch until it ended; resolves it then. */
function ended(id: string, timeout = 60_000) {
  return vi.waitFor(
    async () => {
      const batch = await client.messages.batches.retrieve(id);
      expect(batch.processing_status).toBe('ended');
      return batch;
    },
    { timeout, interval: 250 },
  );
}

/** Every result line of an ended batch. */
async function results(id: string) {
  const lines: Anthropic.Messages.Batches.MessageBatchIndividualResponse[] = [];
  for await (const line of await client.messages.batches.results(id)) lines.push(line);
  return lines;
}

beforeAll(async () => {
  const catalog = writeCatalog('message-batches', [SIM_MINI_ENTRY, simulatedEntry(SLOW_MODEL, { timeToFirstTokenMs: 1_500 })]);
  cluster = await startCluster({ batch: true, env: { CATALOG_PATH: catalog, EDGE_ADMIN_TOKEN: ADMIN_TOKEN, BATCH_LANE_CONCURRENCY: '8' } });
  client = new Anthropic({ baseURL: origin(), apiKey: cluster.apiKey, maxRetries: 0 });
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('a message batch of 100 requests', () => {
  it('runs to ended, and its results answer each request once with a message', async () => {
    const created = await client.messages.batches.create({ requests: requests(REQUESTS, 'sim-mini') });
    expect(created).toMatchObject({ type: 'message_batch', archived_at: null, results_url: null });
    expect(created.id).toMatch(/^msgbatch_[A-Za-z0-9]{24}$/);
    expect(['in_progress', 'ended']).toContain(created.processing_status);
    expect(Date.parse(created.expires_at) - Date.parse(created.created_at)).toBe(86_400_000);
    batchId = created.id;
    const batch = await ended(created.id);
    expect(batch.request_counts).toEqual({ processing: 0, succeeded: REQUESTS, errored: 0, canceled: 0, expired: 0 });
    expect(batch.ended_at).toBeTruthy();
    expect(batch.results_url).toBe(`${origin()}/v1/messages/batches/${created.id}/results`);
    const lines = await results(created.id);
    expect(lines).toHaveLength(REQUESTS);
    expect(new Set(lines.map((line) => line.custom_id))).toEqual(new Set(requests(REQUESTS, 'sim-mini').map((request) => request.custom_id)));
    for (const line of lines) {
      expect(line.result.type).toBe('succeeded');
      const message = (line.result as Anthropic.Messages.Batches.MessageBatchSucceededResult).message;
      expect(message).toMatchObject({ type: 'message', role: 'assistant' });
      expect(message.content.length).toBeGreaterThan(0);
    }
    const page = await client.messages.batches.list({ limit: 10 });
    expect(page.data.map((item) => item.id)).toContain(created.id);
  }, 90_000);
});

describe('cancelling, malformed requests, owning and deleting', () => {
  it('cancels a batch of slow requests until it ended with canceled requests', async () => {
    const created = await client.messages.batches.create({ requests: requests(40, SLOW_MODEL) });
    const canceling = await client.messages.batches.cancel(created.id);
    expect(['canceling', 'ended']).toContain(canceling.processing_status);
    expect(canceling.cancel_initiated_at).toBeTruthy();
    const batch = await ended(created.id);
    expect(batch.request_counts.canceled).toBeGreaterThan(0);
    expect(batch.request_counts.succeeded + batch.request_counts.canceled).toBe(40);
    const lines = await results(created.id);
    expect(lines).toHaveLength(40);
    expect(lines.filter((line) => line.result.type === 'canceled')).toHaveLength(batch.request_counts.canceled);
  }, 90_000);

  it('answers a request without max_tokens errored in the results, its neighbour succeeded', async () => {
    const [good] = requests(1, 'sim-mini');
    const bad = { custom_id: 'no-max-tokens', params: { model: 'sim-mini', messages: [{ role: 'user', content: 'Hello.' }] } };
    const created = await client.messages.batches.create({ requests: [good!, bad as never] });
    const batch = await ended(created.id);
    expect(batch.request_counts).toMatchObject({ succeeded: 1, errored: 1 });
    const lines = await results(created.id);
    const errored = lines.find((line) => line.custom_id === 'no-max-tokens')!.result;
    expect(errored).toMatchObject({
      type: 'errored',
      error: { type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/max_tokens/) } },
    });
    expect(lines.find((line) => line.custom_id === good!.custom_id)!.result.type).toBe('succeeded');
  }, 60_000);

  it("answers another key's reads of the first batch with Anthropic's 404", async () => {
    const other = await createKey(origin(), ADMIN_TOKEN, { plan: 'enterprise' });
    const otherClient = new Anthropic({ baseURL: origin(), apiKey: other.secret, maxRetries: 0 });
    for (const read of [
      () => otherClient.messages.batches.retrieve(batchId),
      () => otherClient.messages.batches.cancel(batchId),
      () => otherClient.messages.batches.results(batchId),
      () => otherClient.messages.batches.delete(batchId),
    ]) {
      const refused = await read().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(Anthropic.NotFoundError);
      expect((refused as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    }
    expect((await otherClient.messages.batches.list()).data).toEqual([]);
  });

  it('deletes an ended batch: it is gone', async () => {
    expect(await client.messages.batches.delete(batchId)).toEqual({ id: batchId, type: 'message_batch_deleted' });
    await expect(client.messages.batches.retrieve(batchId)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
  });
});

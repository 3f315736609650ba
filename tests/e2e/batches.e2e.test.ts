/**
 * OpenAI's Files and Batch APIs in a running cluster with the batch service, as a user's official
 * `openai` client meets them: a JSONL file of 200 chat completion lines uploaded, a batch of it
 * created and polled until `completed`, its output file read back with one answer of status 200 for
 * each line (each carrying the gateway's `gateway` object, as the same request online does), and
 * the key's /v1/usage counting the 200 requests; a second batch of slow lines cancelled until
 * `cancelled`; a malformed file refused with a 400 naming its line; and another key reading
 * neither the first key's file nor its batch (404s).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '@gateway/testing';
import OpenAI, { toFile } from 'openai';
import { createKey } from './admin-keys.js';
import { type Cluster, SIM_MINI_ENTRY, simulatedEntry, startCluster, writeCatalog } from './cluster.js';

const ADMIN_TOKEN = 'batches-e2e-admin-token-0123456789abcdef';
const LINES = 200;
/** A model slow enough that a batch of it is still running when it is cancelled. */
const SLOW_MODEL = 'sim-slow';

let cluster: Cluster;
let database: TestDatabase;
let client: OpenAI;
/** The first batch's input file and the batch, once made. */
let inputFileId: string;
let batchId: string;

const origin = () => cluster.baseUrl.replace(/\/v1$/, '');

/** A JSONL batch file of `count` chat completion lines for `model`, custom ids `request-<n>`. */
function batchFile(count: number, model: string): string {
  return Array.from({ length: count }, (_, index) =>
    JSON.stringify({
      custom_id: `request-${index}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model, messages: [{ role: 'user', content: `Say the number ${index}.` }], max_tokens: 16 },
    }),
  )
    .map((line) => `${line}\n`)
    .join('');
}

/** Uploads `jsonl` as a batch file with `openai`; resolves with the File object. */
async function upload(openai: OpenAI, jsonl: string, name = 'input.jsonl') {
  return openai.files.create({ file: await toFile(Buffer.from(jsonl), name), purpose: 'batch' });
}

/** One line of a batch's output file, as OpenAI writes it. */
interface OutputLine {
  id: string;
  custom_id: string;
  response: { status_code: number; request_id: string; body: { gateway?: Record<string, unknown> } } | null;
  error: unknown;
}

beforeAll(async () => {
  const catalog = writeCatalog('batches', [SIM_MINI_ENTRY, simulatedEntry(SLOW_MODEL, { timeToFirstTokenMs: 1_500 })]);
  database = await createTestDatabase();
  cluster = await startCluster({
    batch: true,
    requestLog: { databaseUrl: database.url },
    env: { CATALOG_PATH: catalog, EDGE_ADMIN_TOKEN: ADMIN_TOKEN, BATCH_LANE_CONCURRENCY: '8', REQUEST_LOG_BATCH_DELAY_MS: '20' },
  });
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
  await database?.drop();
});

describe('a batch of 200 chat completions', () => {
  it('uploads the file, runs the batch to completed, and answers each line once with a 200 in the output file', async () => {
    const jsonl = batchFile(LINES, 'sim-mini');
    const file = await upload(client, jsonl);
    expect(file).toMatchObject({ object: 'file', purpose: 'batch', filename: 'input.jsonl', bytes: Buffer.byteLength(jsonl) });
    expect(file.id).toMatch(/^file-/);
    inputFileId = file.id;
    expect(await client.files.retrieve(file.id)).toMatchObject({ id: file.id, bytes: Buffer.byteLength(jsonl) });
    expect(await (await client.files.content(file.id)).text()).toBe(jsonl);

    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { job: 'e2e' },
    });
    batchId = created.id;
    expect(created).toMatchObject({
      object: 'batch',
      endpoint: '/v1/chat/completions',
      input_file_id: file.id,
      completion_window: '24h',
      output_file_id: null,
      error_file_id: null,
      completed_at: null,
      cancelled_at: null,
      metadata: { job: 'e2e' },
    });
    expect(created.id).toMatch(/^batch_/);

    const done = await vi.waitFor(
      async () => {
        const batch = await client.batches.retrieve(created.id);
        expect(batch.status).toBe('completed');
        return batch;
      },
      { timeout: 120_000, interval: 250 },
    );
    expect(done.request_counts).toEqual({ total: LINES, completed: LINES, failed: 0 });
    expect(done.completed_at).toBeGreaterThanOrEqual(done.created_at);
    expect(done.output_file_id).toMatch(/^file-/);

    const output = await (await client.files.content(done.output_file_id!)).text();
    const lines = output
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as OutputLine);
    expect(lines).toHaveLength(LINES);
    expect(new Set(lines.map((line) => line.custom_id))).toEqual(new Set(Array.from({ length: LINES }, (_, index) => `request-${index}`)));
    for (const line of lines) {
      expect(line.response?.status_code, line.custom_id).toBe(200);
      expect(line.response?.body.gateway, line.custom_id).toBeTypeOf('object');
      expect(line.error).toBeNull();
    }
    // The batch's own page lists it.
    expect((await client.batches.list({ limit: 10 })).data.map((batch) => batch.id)).toContain(created.id);
  }, 180_000);

  it("counts the batch's 200 requests in the key's /v1/usage, as online ones", async () => {
    const start = Math.floor(Date.now() / 1000) - 3_600;
    await vi.waitFor(
      async () => {
        const response = await fetch(`${origin()}/v1/usage?start=${start}&bucket=day&group_by=model`, {
          headers: { authorization: `Bearer ${cluster.apiKey}` },
        });
        const page = (await response.json()) as { data: Array<{ results: Array<{ model: string; requests: number }> }> };
        const row = page.data.flatMap((bucket) => bucket.results).find((result) => result.model === 'sim-mini');
        expect(row?.requests).toBe(LINES);
      },
      { timeout: 30_000, interval: 250 },
    );
  }, 60_000);
});

describe("the batch's lines in the request log", () => {
  it('lists the 200 lines under the batch id, and no online request under it', async () => {
    const online = await client.chat.completions.create({ model: 'sim-mini', messages: [{ role: 'user', content: 'An online request.' }] });
    expect(online.choices[0]?.message.content).toBeTruthy();
    const page = async (query: string) => {
      const response = await fetch(`${origin()}/admin/v1/requests?${query}&start=${Math.floor(Date.now() / 1000) - 3_600}&limit=1000`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(response.status, await response.clone().text()).toBe(200);
      return ((await response.json()) as { data: Array<{ batch_id: string | null; request_id: string }> }).data;
    };
    await vi.waitFor(async () => expect(await page(`batch_id=${batchId}`)).toHaveLength(LINES), { timeout: 30_000, interval: 250 });
    const lines = await page(`batch_id=${batchId}`);
    expect(new Set(lines.map((line) => line.batch_id))).toEqual(new Set([batchId]));
    expect(new Set(lines.map((line) => line.request_id)).size).toBe(LINES);
    await vi.waitFor(async () => expect((await page('model=sim-mini')).some((request) => request.batch_id === null)).toBe(true), {
      timeout: 30_000,
      interval: 250,
    });
  }, 60_000);
});

describe('cancelling, refusing and owning', () => {
  it('cancels a running batch until it is cancelled', async () => {
    const file = await upload(client, batchFile(40, SLOW_MODEL), 'slow.jsonl');
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' });
    const cancelling = await client.batches.cancel(batch.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    expect(cancelling.cancelling_at).toBeTypeOf('number');
    const cancelled = await vi.waitFor(
      async () => {
        const current = await client.batches.retrieve(batch.id);
        expect(current.status).toBe('cancelled');
        return current;
      },
      { timeout: 60_000, interval: 250 },
    );
    expect(cancelled.cancelled_at).toBeGreaterThanOrEqual(cancelled.cancelling_at!);
    expect(cancelled.request_counts!.completed).toBeLessThan(40);
  }, 90_000);

  it('refuses a malformed batch file with a 400 naming its line', async () => {
    const jsonl = `${batchFile(1, 'sim-mini')}this is not JSON\n`;
    const refused = await upload(client, jsonl, 'broken.jsonl').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    const error = refused as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/line 2/i);
  });

  it("answers another key's reads of the first key's file and batch with a 404", async () => {
    const other = await createKey(origin(), ADMIN_TOKEN, { plan: 'enterprise' });
    const otherClient = new OpenAI({ baseURL: cluster.baseUrl, apiKey: other.secret, maxRetries: 0 });
    for (const read of [
      () => otherClient.files.retrieve(inputFileId),
      () => otherClient.files.content(inputFileId),
      () => otherClient.files.delete(inputFileId),
      () => otherClient.batches.retrieve(batchId),
      () => otherClient.batches.cancel(batchId),
    ]) {
      const refused = await read().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(OpenAI.NotFoundError);
    }
    expect((await otherClient.files.list()).data).toEqual([]);
    // The owner still reads it.
    expect((await client.files.retrieve(inputFileId)).id).toBe(inputFileId);
  });
});

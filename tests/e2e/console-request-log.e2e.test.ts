/**
 * The console's Requests page on the request log, in a real browser (Debian's Chromium through
 * playwright-core) against a cluster with the request-log service: a viewer logs in, finds the
 * requests made through the gateway, narrows them by API and by status, orders them by latency,
 * opens one and reads its request id, its trace id (tracing on: the caller's trace) and its bodies
 * (the key keeps them, and REQUEST_LOG_BODIES_VIEWERS lets every viewer see them), and exports
 * the search as CSV and JSONL downloads; a response-cache hit (its usage event as an edge publishes
 * it) shows its badge and the cost it saved. No console error, no CSP violation along the way.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Redis } from 'ioredis';
import { connect } from 'nats';
import { encodeUsageEvent, usageNames } from '@gateway/messaging';
import { createTestDatabase, eventually, freePort, natsServers, type TestDatabase } from '@gateway/testing';
import { createAdminToken, type Cluster } from './cluster.js';
import { startRequestLogCluster } from './request-log-cluster.js';
import { consoleClusterEnv, openConsoleBrowser, requireChromium, type ConsoleBrowser } from './console-browser.js';

const ADMIN_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
const TRACE_ID = randomBytes(16).toString('hex');

let cluster: Cluster;
let origin: string;
let database: TestDatabase;
let collector: Server;
let browser: ConsoleBrowser;
let page: Page;
let viewerSecret: string;
let keyId: string;
const requestIds: Record<'whole' | 'stream' | 'messages', string> = {
  whole: `console-whole-${randomUUID()}`,
  stream: `console-stream-${randomUUID()}`,
  messages: `console-messages-${randomUUID()}`,
};

const byTestId = (id: string) => page.getByTestId(id);
const pageReady = () => browser.pageReady('requests');
const rowIds = async () => page.locator('[data-testid="request-row"]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-request-id')));

/** Sets the search form's fields given (in the form's order; an empty one clears it), applies the search and waits for the page. */
async function search(fields: { api?: string; status?: string; deployment?: string; sort?: string }): Promise<void> {
  if (fields.api !== undefined) await byTestId('requests-api').selectOption(fields.api);
  if (fields.status !== undefined) await byTestId('requests-status').fill(fields.status);
  if (fields.deployment !== undefined) await byTestId('requests-deployment').fill(fields.deployment);
  if (fields.sort !== undefined) await byTestId('requests-sort').selectOption(fields.sort);
  await byTestId('requests-apply').click();
  await pageReady();
}

beforeAll(async () => {
  requireChromium();
  database = await createTestDatabase('reqlog_console');
  // An OTLP/HTTP collector that takes every export: tracing on gives each request its trace id.
  const collectorPort = await freePort();
  collector = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => collector.listen(collectorPort, '127.0.0.1', resolve));
  cluster = await startRequestLogCluster(database, ADMIN_TOKEN, {
    ...consoleClusterEnv(),
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`,
    REQUEST_LOG_BODIES_VIEWERS: '*',
  });
  origin = new URL(cluster.baseUrl).origin;
  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  // The cluster's key (found as auth stores it: Redis is shared with other clusters) keeps its requests' bodies.
  const redis = new Redis(cluster.redisUrl);
  keyId = (await redis.hget(`${cluster.authPrefix}key:${createHash('sha256').update(cluster.apiKey).digest('hex')}`, 'key_id'))!;
  await redis.quit();
  expect((await admin('PATCH', `/admin/v1/keys/${keyId}`, { log_bodies: true })).status).toBe(200);
  viewerSecret = await createAdminToken(origin, ADMIN_TOKEN, 'viewer', 'console-request-log');

  const post = (path: string, body: unknown, requestId: string, headers: Record<string, string> = {}) =>
    fetch(`${origin}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
      body: JSON.stringify(body),
    }).then(async (response) => {
      expect(response.status).toBe(200);
      await response.text();
    });
  const messages = [{ role: 'user', content: 'Hello console' }];
  await post('/v1/chat/completions', { model: 'sim-mini', messages }, requestIds.whole, { traceparent: `00-${TRACE_ID}-${randomBytes(8).toString('hex')}-01` });
  await post('/v1/chat/completions', { model: 'sim-mini', messages, stream: true }, requestIds.stream);
  await post('/v1/messages', { model: 'sim-mini', max_tokens: 32, messages }, requestIds.messages, { 'anthropic-version': '2023-06-01' });
  await eventually(
    async () => ((await (await admin('GET', `/admin/v1/requests/${requestIds.whole}`)).json()) as { bodies?: unknown }).bodies ?? undefined,
    'the bodies of the whole request in the log',
    30_000,
    200,
  );

  browser = await openConsoleBrowser({ context: { viewport: { width: 1400, height: 1000 }, acceptDownloads: true } });
  page = browser.page;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
  // Absent when beforeAll failed before making it: a close of nothing would never call back.
  if (collector) await new Promise((resolve) => collector.close(resolve));
  await database?.drop();
}, 60_000);

describe('the Requests page on the request log', () => {
  it('shows every request to a viewer, once the log has them', async () => {
    await browser.logIn(`${origin}/console#/requests`, viewerSecret);
    await byTestId('nav-requests').click();
    await pageReady();
    await byTestId('requests-filters').waitFor();
    const deadline = Date.now() + 30_000;
    while ((await rowIds()).length < 3) {
      if (Date.now() > deadline) throw new Error(`the Requests page did not show 3 requests within 30 s: ${await rowIds()}`);
      await page.waitForTimeout(500);
      await byTestId('requests-refresh').click();
      await pageReady();
    }
    expect((await rowIds()).sort()).toEqual(Object.values(requestIds).sort());
    expect(await byTestId('requests-log-off').count()).toBe(0);
  }, 60_000);

  it('narrows the requests by API, status and deployment, and orders them by latency', async () => {
    await search({ api: 'messages' });
    expect(await rowIds()).toEqual([requestIds.messages]);

    await search({ api: '', status: '429' });
    expect(await rowIds()).toEqual([]);
    expect(await page.locator('[data-testid="requests-table"] tbody').textContent()).toContain('No request matches the search.');

    await search({ status: '200', deployment: '1:https://unknown.example' });
    expect(await rowIds()).toEqual([]);

    await search({ deployment: '0:in-process', sort: 'latency desc' });
    expect((await rowIds()).length).toBe(3);
    // The latency as the row holds it in ms: its text may be in seconds ("1.2 s") on a loaded machine.
    const latencies = await page
      .locator('[data-testid="request-row"] [data-testid="request-latency"]')
      .evaluateAll((cells) => cells.map((cell) => Number(cell.getAttribute('data-latency-ms'))));
    expect(latencies).toEqual([...latencies].sort((a, b) => b - a));
  }, 60_000);

  it("opens a request's detail with its request id, its trace id and its bodies", async () => {
    await byTestId('requests-clear').click();
    await pageReady();
    await page.locator(`[data-testid="request-row"][data-request-id="${requestIds.whole}"] [data-testid="request-open"]`).click();
    await page.locator('[data-testid="request-detail"][data-state="ready"]').waitFor();
    expect(await byTestId('request-detail-request-id').textContent()).toBe(requestIds.whole);
    expect(await byTestId('request-detail-trace-id').textContent()).toBe(TRACE_ID);
    expect(await byTestId('request-detail-api').textContent()).toBe('chat_completions');
    expect(await byTestId('request-detail-status').textContent()).toBe('200');
    // sim-mini answers in the executor: its one deployment.
    expect(await byTestId('request-detail-deployment').textContent()).toBe('0:in-process');
    expect(JSON.parse((await byTestId('request-detail-request-body').textContent())!).messages[0].content).toBe('Hello console');
    expect(JSON.parse((await byTestId('request-detail-response-body').textContent())!).object).toBe('chat.completion');
    await byTestId('request-detail-close').click();
    expect(await byTestId('request-detail').count()).toBe(0);
  }, 60_000);

  it('exports the search as CSV and JSONL downloads', async () => {
    await search({ api: 'chat_completions' });
    const [csv] = await Promise.all([page.waitForEvent('download'), byTestId('requests-export-csv').click()]);
    expect(csv.suggestedFilename()).toMatch(/^requests-.*\.csv$/);
    const lines = readFileSync((await csv.path())!, 'utf8')
      .trim()
      .split('\r\n');
    expect(lines[0]).toMatch(/^id,created_at,request_id,/);
    expect(
      lines
        .slice(1)
        .map((line) => line.split(',')[2])
        .sort(),
    ).toEqual([requestIds.whole, requestIds.stream].sort());

    const [jsonl] = await Promise.all([page.waitForEvent('download'), byTestId('requests-export-jsonl').click()]);
    const rows = readFileSync((await jsonl.path())!, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { request_id: string });
    expect(rows.map((row) => row.request_id).sort()).toEqual([requestIds.whole, requestIds.stream].sort());
    expect(browser.problems).toEqual([]);
  }, 60_000);

  it('shows a response-cache hit with its badge and the cost it saved, in the table and the detail', async () => {
    const requestId = `console-hit-${randomUUID()}`;
    const eventId = randomUUID();
    // The usage event an edge publishes for a hit: the stored answer's model and tokens, at the default hit cost (0).
    const nc = await connect({ servers: natsServers(cluster.natsUrl) });
    try {
      await nc.jetstream().publish(
        usageNames(cluster.usageStream).subject,
        encodeUsageEvent({
          event_id: eventId,
          request_id: requestId,
          key_id: keyId,
          model_id: 'sim-mini',
          requested_model: 'sim-mini',
          provider: 'simulated',
          usage: { prompt_tokens: 1_000, completion_tokens: 375, total_tokens: 1_375 },
          received_at_ms: Date.now(),
          latency_ms: 3,
          outcome: 'OUTCOME_COMPLETED',
          api: 'responses',
          operation: 'chat',
          http_status: 200,
          cache: { status: 'hit', age_ms: 42_000, saved_cost_pico_usd: 6_250_000_000, cost_pico_usd: 0, count_tokens: false },
        }),
        { msgID: eventId },
      );
    } finally {
      await nc.close();
    }
    await search({ api: 'responses' });
    const row = page.locator(`[data-testid="request-row"][data-request-id="${requestId}"]`);
    const deadline = Date.now() + 30_000;
    while ((await row.count()) === 0) {
      if (Date.now() > deadline) throw new Error('the Requests page did not show the cache hit within 30 s');
      await page.waitForTimeout(500);
      await byTestId('requests-refresh').click();
      await pageReady();
    }
    const hit = row.getByTestId('request-cache-hit');
    expect(await hit.textContent()).toBe('cache hit saved $0.00625');
    expect(await hit.getAttribute('data-saved-cost-usd')).toBe('0.00625');
    expect(await row.getByTestId('request-cost').getAttribute('data-cost-usd')).toBe('0');
    await row.getByTestId('request-open').click();
    await page.locator('[data-testid="request-detail"][data-state="ready"]').waitFor();
    expect(await byTestId('request-detail-cache').textContent()).toBe('cache hit');
    expect(await byTestId('request-detail-saved-cost').textContent()).toBe('$0.00625 (6250000000 pico-USD)');
    await byTestId('request-detail-close').click();
    expect(browser.problems).toEqual([]);
  }, 60_000);
});

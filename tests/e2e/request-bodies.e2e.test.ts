/**
 * Request bodies in the request log through the whole cluster: a key with `log_bodies` on gets its
 * prompt and its answer (whole, and what a stream sent) in GET /admin/v1/requests/{id}, with a
 * secret in the prompt redacted; a key without gets none; a team's setting applies to its member
 * keys; searches never carry bodies; and a viewer sees them only once REQUEST_LOG_BODIES_VIEWERS
 * names it.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, eventually, type TestDatabase } from '@gateway/testing';
import { stopProcess, type Cluster } from './cluster.js';
import { startRequestLogCluster } from './request-log-cluster.js';

const STATIC_TOKEN = `admin-${randomBytes(24).toString('hex')}`;
/** A secret a careless prompt carries: the log must never keep it. */
const SECRET = `sk-proj-${randomBytes(16).toString('hex')}`;
let cluster: Cluster;
let origin: string;
let database: TestDatabase;
let viewers: Array<{ id: string; secret: string }> = [];

// biome-ignore lint/suspicious/noExplicitAny: each test asserts the fields it reads
type Answer = any;

async function admin(method: string, path: string, body?: unknown, token = STATIC_TOKEN): Promise<{ status: number; json: Answer }> {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? JSON.parse(text) : undefined };
}

/** A new key's secret, created through the admin API with these settings. */
async function newKey(settings: Record<string, unknown>): Promise<string> {
  const created = await admin('POST', '/admin/v1/keys', { plan: 'pro', ...settings });
  expect(created.status).toBe(201);
  return created.json.secret as string;
}

/** A chat completion of `key` with x-request-id `requestId`; the answer's text as the caller read it. */
async function chat(key: string, requestId: string, content: string, stream = false): Promise<string> {
  const response = await fetch(`${origin}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content }], stream }),
  });
  const text = await response.text();
  expect(response.status).toBe(200);
  return text;
}

/** The request's detail, once the log holds it (and, when asked, its bodies). */
async function detail(requestId: string, options: { bodies: boolean; token?: string } = { bodies: false }): Promise<Answer> {
  return eventually(
    async () => {
      // Refused while the edge starts again (the last test restarts it): asked again.
      const found = await admin('GET', `/admin/v1/requests/${requestId}`, undefined, options.token).catch(() => undefined);
      if (found?.status !== 200) return undefined;
      return !options.bodies || found.json.bodies ? found.json : undefined;
    },
    `request ${requestId} in the log${options.bodies ? ' with its bodies' : ''}`,
    30_000,
    200,
  );
}

/** The streamed text of an SSE body. */
function streamedContent(sse: string): string {
  return sse
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)).choices?.[0]?.delta?.content ?? '')
    .join('');
}

beforeAll(async () => {
  database = await createTestDatabase('bodies_e2e');
  cluster = await startRequestLogCluster(database, STATIC_TOKEN, { REQUEST_LOG_BODY_MAX_BYTES: '4096', REQUEST_LOG_BODIES_VIEWERS: '' });
  origin = new URL(cluster.baseUrl).origin;
  for (const name of ['bodies-viewer', 'other-viewer']) {
    const created = await admin('POST', '/admin/v1/admin-tokens', { role: 'viewer', name });
    viewers.push({ id: created.json.id, secret: created.json.secret });
  }
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
  await database?.drop();
  viewers = [];
}, 60_000);

describe('request bodies in the request log', () => {
  it("keeps a key's prompt and answer, whole and streamed, with a secret in the prompt redacted", async () => {
    const key = await newKey({ log_bodies: true });
    const prompt = `Please check my key ${SECRET} and say hello`;
    const wholeId = `bodies-whole-${randomUUID()}`;
    const whole = JSON.parse(await chat(key, wholeId, prompt));
    const found = await detail(wholeId, { bodies: true });
    expect(found.bodies.request).not.toContain(SECRET);
    expect(JSON.parse(found.bodies.request).messages[0].content).toBe('Please check my key [REDACTED] and say hello');
    expect(JSON.parse(found.bodies.response).choices[0].message.content).toBe(whole.choices[0].message.content);
    expect(found.bodies).toMatchObject({ request_truncated: false, response_truncated: false });

    const streamId = `bodies-stream-${randomUUID()}`;
    const streamed = streamedContent(await chat(key, streamId, 'Say hello, streamed', true));
    expect(streamed.length).toBeGreaterThan(0);
    const fromStream = await detail(streamId, { bodies: true });
    expect(JSON.parse(fromStream.bodies.request)).toMatchObject({ stream: true, messages: [{ content: 'Say hello, streamed' }] });
    expect(JSON.parse(fromStream.bodies.response).text).toBe(streamed);

    // A prompt larger than the cap (4 KiB here) is kept cut, saying how much was cut.
    const longId = `bodies-long-${randomUUID()}`;
    await chat(key, longId, 'é'.repeat(5_000));
    const long = await detail(longId, { bodies: true });
    expect(long.bodies.request_truncated).toBe(true);
    expect(long.bodies.request).toMatch(/…\[truncated \d+ bytes\]$/);
    expect(Buffer.byteLength(long.bodies.request)).toBeLessThanOrEqual(4096);

    // A search never carries bodies.
    const search = await admin('GET', `/admin/v1/requests?limit=1000`);
    expect(search.status).toBe(200);
    expect(search.json.data.length).toBeGreaterThan(0);
    for (const row of search.json.data) expect(row).not.toHaveProperty('bodies');
  }, 90_000);

  it('keeps none for a key without log_bodies, and keeps those of every key of a team that has it on', async () => {
    const plainId = `bodies-plain-${randomUUID()}`;
    await chat(await newKey({}), plainId, `nothing to keep ${SECRET}`);
    // Logged, without bodies; a request with bodies sent after it is in the log with them, so none are on their way.
    const plain = await detail(plainId);
    const team = await admin('POST', '/admin/v1/teams', { name: `bodies ${randomUUID()}`, log_bodies: true });
    expect(team.status).toBe(201);
    expect(team.json.log_bodies).toBe(true);
    const memberKey = await newKey({ team_id: team.json.id });
    const memberId = `bodies-member-${randomUUID()}`;
    await chat(memberKey, memberId, 'a team member says hello');
    const member = await detail(memberId, { bodies: true });
    expect(member.team_id).toBe(team.json.id);
    expect(JSON.parse(member.bodies.request).messages[0].content).toBe('a team member says hello');
    expect((await detail(plainId)).bodies).toBeNull();
    expect(plain.bodies).toBeNull();

    // The team's setting turned off: its keys' next requests keep none.
    expect((await admin('PATCH', `/admin/v1/teams/${team.json.id}`, { log_bodies: false })).json.log_bodies).toBe(false);
    const afterId = `bodies-after-${randomUUID()}`;
    await chat(memberKey, afterId, 'no longer kept');
    const laterKey = await newKey({ log_bodies: true });
    const laterId = `bodies-later-${randomUUID()}`;
    await chat(laterKey, laterId, 'kept');
    await detail(laterId, { bodies: true });
    expect((await detail(afterId)).bodies).toBeNull();
  }, 90_000);

  it('shows a viewer no bodies unless REQUEST_LOG_BODIES_VIEWERS names it', async () => {
    const key = await newKey({ log_bodies: true });
    const requestId = `bodies-viewer-${randomUUID()}`;
    await chat(key, requestId, 'for admins only');
    await detail(requestId, { bodies: true });
    const [allowed, other] = viewers;
    for (const viewer of [allowed!, other!]) {
      const seen = await admin('GET', `/admin/v1/requests/${requestId}`, undefined, viewer.secret);
      expect(seen.status).toBe(200);
      expect(seen.json.id).toBeTruthy();
      expect(seen.json.bodies).toBeNull();
    }

    // The edge started again with one viewer named: that viewer sees them, the other still does not.
    await stopProcess(cluster.processes.edge);
    cluster.env.REQUEST_LOG_BODIES_VIEWERS = allowed!.id;
    cluster.restart('edge');
    const seen = await detail(requestId, { bodies: true, token: allowed!.secret });
    expect(JSON.parse(seen.bodies.request).messages[0].content).toBe('for admins only');
    expect((await admin('GET', `/admin/v1/requests/${requestId}`, undefined, other!.secret)).json.bodies).toBeNull();
  }, 90_000);
});

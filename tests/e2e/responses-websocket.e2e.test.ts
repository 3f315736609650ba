/**
 * The Responses API over a WebSocket (GET /v1/responses upgraded) through the running cluster,
 * driven by a plain `ws` client the way Codex speaks it: the key checked on the upgrade (401 before
 * any socket), responses one after another on one socket, each event one JSON text frame, chaining
 * with `previous_response_id` and only the new items (the socket's own memory, stored or not),
 * Codex's prewarm (`generate: false`), refusals as error events on a socket that stays usable (bad
 * JSON, an unknown previous response, the key's rate limit), the message-size and idle bounds, and
 * a closed socket leaving nothing open. Then compaction over HTTP: a `compaction_trigger` answered
 * by exactly one `compaction` item, that item accepted in a later request's input, a foreign one
 * refused, and POST /v1/responses/compact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually } from '@gateway/testing';
import { metric, startCluster, type Cluster } from './cluster.js';

const CATALOG = new URL('./fixtures/conformance-catalog.yaml', import.meta.url).pathname;
const ADMIN_TOKEN = 'admin-token-for-the-websocket-tests-0123456789';
const MODEL = 'sim-full';
const MAX_MESSAGE_BYTES = 64 * 1024;
const IDLE_TIMEOUT_MS = 4_000;

type Event = { type: string } & Record<string, unknown>;

let cluster: Cluster;
let origin: string;
let metricsUrl: string;

/** A socket on /v1/responses and every message it received, in order. */
interface OpenSocket {
  socket: WebSocket;
  received: Event[];
  /** Resolves with the close code once the server closed the socket. */
  closed: Promise<number>;
}

/** Opens a socket with `key`; rejects with the HTTP status when the upgrade is refused. */
function openSocket(key = cluster.apiKey): Promise<OpenSocket> {
  const socket = new WebSocket(`${origin.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${key}` } });
  const received: Event[] = [];
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  socket.on('message', (data, isBinary) => {
    expect(isBinary).toBe(false);
    received.push(JSON.parse(String(data)) as Event);
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve({ socket, received, closed }));
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
    socket.once('error', reject);
  });
}

/** Waits until the socket received `count` messages ending a response or refusing one, from `from` on. */
async function untilEnded(open: OpenSocket, count: number, from = 0): Promise<Event[]> {
  const ends = new Set(['response.completed', 'response.incomplete', 'response.failed', 'error']);
  return eventually(
    () => {
      const events = open.received.slice(from);
      return events.filter((event) => ends.has(event.type)).length >= count && events;
    },
    `${count} ended responses on the socket`,
    30_000,
    20,
  );
}

/** A response.create message. */
function create(fields: Record<string, unknown>): string {
  return JSON.stringify({ type: 'response.create', model: MODEL, ...fields });
}

/** A user message input item. */
function userMessage(text: string) {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

/** A key of its own, with `limits`, made through the admin API. */
async function createKey(limits: Record<string, number>): Promise<string> {
  const response = await fetch(`${origin}/admin/v1/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ plan: 'pro', name: 'websocket limits', limits }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { secret: string }).secret;
}

/** POST /v1/responses (or a sub-path) with a JSON body. */
function post(path: string, body: unknown, key = cluster.apiKey): Promise<Response> {
  return fetch(`${cluster.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  cluster = await startCluster({
    env: {
      CATALOG_PATH: CATALOG,
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      EDGE_WS_MAX_MESSAGE_BYTES: String(MAX_MESSAGE_BYTES),
      EDGE_WS_IDLE_TIMEOUT_MS: String(IDLE_TIMEOUT_MS),
    },
  });
  origin = cluster.baseUrl.replace(/\/v1$/, '');
  metricsUrl = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
});

afterAll(async () => {
  await cluster?.stop();
});

describe('the Responses WebSocket', () => {
  it('refuses the upgrade with 401 when the key is missing or unknown, before any socket exists', async () => {
    await expect(openSocket('br-not-a-key-of-this-gateway')).rejects.toThrow('upgrade refused: 401');
    await expect(openSocket('')).rejects.toThrow('upgrade refused: 401');
    // A GET without an upgrade is still the 405 of the other methods.
    const plain = await fetch(`${cluster.baseUrl}/responses`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
    expect(plain.status).toBe(405);
  });

  it('answers responses one after another on one socket, each event a JSON text frame in the SSE sequence', async () => {
    const open = await openSocket();
    open.socket.send(create({ input: 'Tell me about rivers.' }));
    open.socket.send(create({ input: 'Tell me about mountains.' }));
    const events = await untilEnded(open, 2);
    const completed = events.filter((event) => event.type === 'response.completed');
    expect(completed).toHaveLength(2);
    // The first response's events all come before the second's: sequence numbers restart at 0.
    const starts = events.flatMap((event, index) => (event.sequence_number === 0 ? [index] : []));
    expect(starts).toHaveLength(2);
    expect(events[starts[0]!]!.type).toBe('response.created');
    expect(events[starts[1]! - 1]!.type).toBe('response.completed');
    for (const response of completed.map((event) => event.response as Record<string, unknown>)) {
      expect(response.status).toBe('completed');
      expect((response.output as Array<{ type: string }>)[0]?.type).toBe('message');
      expect((response.usage as { output_tokens: number }).output_tokens).toBeGreaterThan(0);
    }
    expect((completed[0]!.response as { id: string }).id).not.toBe((completed[1]!.response as { id: string }).id);
    open.socket.close();
  });

  it("continues the socket's last response from previous_response_id with only the new items, stored or not", async () => {
    const open = await openSocket();
    open.socket.send(create({ store: false, input: [userMessage('My name is Ada.')] }));
    const first = (await untilEnded(open, 1)).find((event) => event.type === 'response.completed')!.response as { id: string };
    const seen = open.received.length;
    open.socket.send(create({ store: true, previous_response_id: first.id, input: [userMessage('What is my name?')] }));
    const second = (await untilEnded(open, 1, seen)).find((event) => event.type === 'response.completed')!.response as { id: string };
    // Stored, the second response lists the whole conversation: the first turn, its answer, the new turn.
    const items = await fetch(`${cluster.baseUrl}/responses/${second.id}/input_items?order=asc`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
    expect(items.status).toBe(200);
    const texts = ((await items.json()) as { data: Array<{ role?: string; content?: Array<{ text?: string }> }> }).data.map(
      (item) => `${item.role}: ${item.content?.[0]?.text ?? ''}`,
    );
    expect(texts[0]).toBe('user: My name is Ada.');
    expect(texts[1]).toMatch(/^assistant: ./);
    expect(texts.at(-1)).toBe('user: What is my name?');
    open.socket.close();
  });

  it("answers Codex's prewarm (generate: false) with an empty completed response that the next request continues", async () => {
    const open = await openSocket();
    open.socket.send(create({ generate: false, store: false, input: [userMessage('Remember the word heron.')] }));
    const events = await untilEnded(open, 1);
    expect(events.map((event) => event.type)).toEqual(['response.created', 'response.completed']);
    const prewarm = events[1]!.response as { id: string; output: unknown[] };
    expect(prewarm.output).toEqual([]);
    open.socket.send(create({ store: true, previous_response_id: prewarm.id, input: [userMessage('Which word?')] }));
    const next = (await untilEnded(open, 1, 2)).find((event) => event.type === 'response.completed')!.response as { id: string };
    const items = await fetch(`${cluster.baseUrl}/responses/${next.id}/input_items?order=asc`, { headers: { authorization: `Bearer ${cluster.apiKey}` } });
    const data = ((await items.json()) as { data: Array<{ content?: Array<{ text?: string }> }> }).data;
    expect(data.map((item) => item.content?.[0]?.text)).toEqual(['Remember the word heron.', 'Which word?']);
    open.socket.close();
  });

  it('answers bad JSON, unknown messages and an unknown previous response with error events, and the socket stays usable', async () => {
    const open = await openSocket();
    open.socket.send('{not json');
    open.socket.send(JSON.stringify({ type: 'session.update' }));
    open.socket.send(create({ previous_response_id: 'resp_unknown', input: 'Hello' }));
    open.socket.send(JSON.stringify({ type: 'response.processed', response_id: 'resp_unknown' }));
    open.socket.send(create({ input: 'Hello' }));
    const events = await untilEnded(open, 4);
    const errors = events.filter((event) => event.type === 'error') as unknown as Array<{ status: number; error: { code: string } }>;
    expect(errors.map((event) => [event.status, event.error.code])).toEqual([
      [400, 'invalid_json'],
      [400, 'unknown_message_type'],
      [400, 'previous_response_not_found'],
    ]);
    expect(events.at(-1)!.type).toBe('response.completed');
    open.socket.close();
  });

  it("refuses a response over the key's rate limit with a 429 error event carrying retry-after", async () => {
    const key = await createKey({ requests_per_minute: 1 });
    const open = await openSocket(key);
    open.socket.send(create({ input: 'One.' }));
    open.socket.send(create({ input: 'Two.' }));
    const events = await untilEnded(open, 2);
    expect(events.filter((event) => event.type === 'response.completed')).toHaveLength(1);
    const refusal = events.find((event) => event.type === 'error') as unknown as { status: number; error: { type: string }; headers: Record<string, string> };
    // The same refusal as POST /v1/responses over the key's requests per minute.
    expect(refusal.status).toBe(429);
    expect(refusal.error.type).toBe('requests');
    expect(Number(refusal.headers['retry-after'])).toBeGreaterThan(0);
    open.socket.close();
  });

  it('closes a socket sent a message over the size bound (1009), and one left idle (1000), each counted by its reason', async () => {
    const closes = (reason: string) => metric(metricsUrl, 'gateway_responses_websocket_duration_seconds_count', { reason });
    const before = { large: await closes('message_too_large'), idle: await closes('idle') };
    const large = await openSocket();
    large.socket.send(create({ input: 'x'.repeat(MAX_MESSAGE_BYTES + 1) }));
    expect(await large.closed).toBe(1009);
    const idle = await openSocket();
    const started = Date.now();
    expect(await idle.closed).toBe(1000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(IDLE_TIMEOUT_MS - 500);
    await eventually(
      async () => ((await closes('message_too_large')) === before.large + 1 && (await closes('idle')) === before.idle + 1) || undefined,
      'both closes to be counted by their reason',
      5_000,
      50,
    );
  });

  it('leaves no socket open once clients closed theirs, a running response included', async () => {
    const open = await openSocket();
    open.socket.send(create({ input: 'Tell me a long story about rivers.' }));
    await eventually(() => open.received.length > 0, 'the first event', 30_000, 20);
    open.socket.close();
    await open.closed;
    await eventually(async () => (await metric(metricsUrl, 'gateway_responses_websockets_open')) === 0, 'no open sockets', 10_000, 50);
  });
});

describe('compaction', () => {
  const conversation = [userMessage('We are renaming the function parse to parseRequest.'), userMessage('Done in two files.')];

  it('answers a compaction_trigger with exactly one compaction item, which a later request accepts in its input', async () => {
    const response = await post('/responses', { model: MODEL, store: false, input: [...conversation, { type: 'compaction_trigger' }] });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { output: Array<{ type: string; encrypted_content?: string }> };
    expect(body.output.map((item) => item.type)).toEqual(['compaction']);
    expect(body.output[0]!.encrypted_content).toMatch(/^gwc1\./);
    const next = await post('/responses', { model: MODEL, store: false, input: [body.output[0], userMessage('Continue.')] });
    expect(next.status).toBe(200);
    expect(((await next.json()) as { output: Array<{ type: string }> }).output[0]!.type).toBe('message');
  });

  it('streams the compaction item as an added and done item before response.completed', async () => {
    const response = await post('/responses', { model: MODEL, stream: true, input: [...conversation, { type: 'compaction_trigger' }] });
    const types = (await response.text())
      .split('\n\n')
      .filter((block) => block.startsWith('event: '))
      .map((block) => JSON.parse(block.split('\n')[1]!.slice('data: '.length)) as Event)
      .map((event) => (event.type.startsWith('response.output_item') ? `${event.type}:${(event.item as { type: string }).type}` : event.type));
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added:compaction',
      'response.output_item.done:compaction',
      'response.completed',
    ]);
  });

  it('refuses a compaction item this gateway did not make, naming it', async () => {
    const response = await post('/responses', {
      model: MODEL,
      input: [{ type: 'compaction', encrypted_content: 'gAAAAB-openai-sealed' }, userMessage('Go on.')],
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_compaction', param: 'input[0].encrypted_content' } });
  });

  it('serves POST /v1/responses/compact: the user messages, then one compaction item', async () => {
    const response = await post('/responses/compact', { model: MODEL, input: conversation });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { object: string; output: Array<{ type: string; role?: string }> };
    expect(body.object).toBe('response.compaction');
    expect(body.output.map((item) => item.type)).toEqual(['message', 'message', 'compaction']);
    const refused = await post('/responses/compact', { model: MODEL, input: conversation }, 'br-not-a-key-of-this-gateway');
    expect(refused.status).toBe(401);
  });
});

/**
 * Stored responses through the edge app (fastify's inject()), with auth, the executor and
 * metering's ResponseStoreService faked behind the edge's own interfaces: what is stored for a
 * response (whole and streamed, not with `store: false`), what a `previous_response_id` puts
 * before the input the model sees, and GET and DELETE /v1/responses/{id}.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import type { CheckKeyRequest, CheckKeyResponseOutput, ExecuteRequest, ExecuteStreamEventOutput, PutResponseRequest } from '@gateway/proto';
import { buildEdgeApp } from '../app.js';
import type { CatalogView } from '../catalog-view.js';
import { readEdgeConfig } from '../config.js';
import type { EdgeDependencies } from '../dependencies.js';
import { allowDecision, TEST_KEY_ID, testModel, wholeAnswer } from '../testing/edge-fakes.js';
import { ResponsesStore } from './responses-store.js';

const KEY = `br-${'k'.repeat(40)}`;
const KEY_ID = TEST_KEY_ID;
const OTHER_KEY = `br-${'o'.repeat(40)}`;

const plain = testModel('plain', { capabilities: { tools: true, vision: false, streaming: true, json_mode: false } });

function decisionFor(apiKey: string): CheckKeyResponseOutput {
  return allowDecision(apiKey === KEY ? KEY_ID : 'key_BBBBBBBBBBBBBBBB');
}

const answer = wholeAnswer('plain', 'Paris.', 2);

/** metering's ResponseStoreService, faked: responses in a map by key id and response id. */
function fakeResponseStore(puts: PutResponseRequest[], kept: Map<string, { response_json: string; input_items_json: string }>) {
  type Callback = (error: Error | null, response?: unknown) => void;
  const answer = (callback: Callback, value: unknown) => setImmediate(() => callback(null, value));
  return {
    PutResponse(request: PutResponseRequest, _metadata: unknown, _options: unknown, callback: Callback) {
      puts.push(request);
      kept.set(`${request.key_id}/${request.response_id}`, { response_json: request.response_json!, input_items_json: request.input_items_json! });
      answer(callback, { outcome: 'PUT_OUTCOME_STORED', ttl_seconds: 60 });
    },
    GetResponse(request: { key_id: string; response_id: string }, _metadata: unknown, _options: unknown, callback: Callback) {
      const stored = kept.get(`${request.key_id}/${request.response_id}`);
      answer(callback, stored ? { found: true, ...stored } : { found: false });
    },
    DeleteResponse(request: { key_id: string; response_id: string }, _metadata: unknown, _options: unknown, callback: Callback) {
      answer(callback, { deleted: kept.delete(`${request.key_id}/${request.response_id}`) });
    },
  };
}

let app: FastifyInstance;
let deps: EdgeDependencies;
let executes: ExecuteRequest[];
let puts: PutResponseRequest[];
let kept: Map<string, { response_json: string; input_items_json: string }>;
let events: ExecuteStreamEventOutput[];

beforeEach(async () => {
  executes = [];
  puts = [];
  kept = new Map();
  events = [];
  const catalog: CatalogView = { ready: true, get: (id) => (id === 'plain' ? plain : undefined), list: () => [plain] };
  deps = {
    config: readEdgeConfig({ EDGE_ADMIN_TOKEN: '' }),
    logger: createLogger('edge-test', 'silent'),
    registry: new prometheus.Registry(),
    decisions: {
      call: async (method: string, request: CheckKeyRequest) =>
        method === 'check_key' ? decisionFor(request.api_key ?? '') : { outcome: 'SETTLE_OUTCOME_SETTLED' },
    },
    completions: {
      call: async (_method: string, request: ExecuteRequest) => {
        executes.push(request);
        return answer;
      },
      stream: (_method: string, request: ExecuteRequest) => {
        executes.push(request);
        const streamed = events;
        return (async function* () {
          yield* streamed;
        })();
      },
    },
    catalog,
    usage: { publish: () => {} },
    responseStore: fakeResponseStore(puts, kept),
    ready: async () => true,
  } as unknown as EdgeDependencies;
  app = await buildEdgeApp(deps);
});

afterEach(async () => {
  await app.close();
});

const send = (method: 'POST' | 'GET' | 'DELETE', url: string, body?: Record<string, unknown>, key = KEY) =>
  app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });

/** Until the store fired by an answer has been called. */
async function stored(count: number): Promise<void> {
  for (let tries = 0; puts.length < count && tries < 100; tries++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(puts).toHaveLength(count);
}

describe('stored responses', () => {
  it('stores a whole response by default: the Response as answered and its input, under the key id', async () => {
    const created = await send('POST', '/v1/responses', { model: 'plain', instructions: 'Be brief.', input: 'Capital of France?' });
    expect(created.statusCode).toBe(200);
    const body = created.json() as { id: string; store: boolean };
    expect(body.store).toBe(true);
    await stored(1);
    expect(puts[0]).toMatchObject({ key_id: KEY_ID, response_id: body.id });
    expect(JSON.parse(puts[0]!.response_json!)).toEqual(body);
    // Instructions are not an input item: a response that continues this one does not carry them over.
    expect(JSON.parse(puts[0]!.input_items_json!)).toEqual([
      { id: expect.stringMatching(/^msg_[0-9a-f]{32}$/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Capital of France?' }] },
    ]);
  });

  it('stores nothing with store: false', async () => {
    const created = await send('POST', '/v1/responses', { model: 'plain', input: 'Hi', store: false });
    expect(created.statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(puts).toEqual([]);
    expect((await send('GET', `/v1/responses/${created.json().id}`)).statusCode).toBe(404);
  });

  it('puts the stored conversation before the input of a request that continues it, without its instructions', async () => {
    const first = (await send('POST', '/v1/responses', { model: 'plain', instructions: 'Be brief.', input: 'Capital of France?' })).json();
    await stored(1);
    const second = await send('POST', '/v1/responses', { model: 'plain', input: 'And of Italy?', previous_response_id: first.id });
    expect(second.statusCode).toBe(200);
    expect(second.json()).toMatchObject({ previous_response_id: first.id, instructions: null });
    const textOf = (message: { text?: string; parts?: { parts?: Array<{ text?: string }> } }) =>
      message.text ?? message.parts?.parts?.map((part) => part.text).join('');
    expect(executes[1]!.request!.messages!.map((message) => [message.role, textOf(message as never)])).toEqual([
      ['ROLE_USER', 'Capital of France?'],
      ['ROLE_ASSISTANT', 'Paris.'],
      ['ROLE_USER', 'And of Italy?'],
    ]);
    await stored(2);
    const inputItems = JSON.parse(puts[1]!.input_items_json!) as Array<Record<string, unknown>>;
    const firstInput = JSON.parse(puts[0]!.input_items_json!)[0];
    expect(inputItems).toEqual([
      firstInput,
      first.output[0],
      { id: expect.stringMatching(/^msg_/), type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And of Italy?' }] },
    ]);
    // Listed newest first by default, a page at a time.
    const page = await send('GET', `/v1/responses/${second.json().id}/input_items?limit=2`);
    expect(page.json()).toEqual({
      object: 'list',
      data: [inputItems[2], inputItems[1]],
      first_id: inputItems[2]!.id,
      last_id: inputItems[1]!.id,
      has_more: true,
    });
    const rest = await send('GET', `/v1/responses/${second.json().id}/input_items?limit=2&after=${inputItems[1]!.id}`);
    expect(rest.json()).toEqual({ object: 'list', data: [firstInput], first_id: firstInput.id, last_id: firstInput.id, has_more: false });
    const ascending = await send('GET', `/v1/responses/${second.json().id}/input_items?order=asc`);
    expect(ascending.json().data).toEqual(inputItems);
    expect((await send('GET', `/v1/responses/${second.json().id}/input_items?limit=101`)).statusCode).toBe(400);
  });

  it("refuses a previous_response_id the key has none of: unknown, or another key's", async () => {
    const first = (await send('POST', '/v1/responses', { model: 'plain', input: 'Capital of France?' })).json();
    await stored(1);
    for (const [id, key] of [
      ['resp_unknown', KEY],
      [first.id, OTHER_KEY],
    ]) {
      const refused = await send('POST', '/v1/responses', { model: 'plain', input: 'And of Italy?', previous_response_id: id }, key);
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toEqual({
        error: {
          message: `Previous response with id '${id}' not found.`,
          type: 'invalid_request_error',
          param: 'previous_response_id',
          code: 'previous_response_not_found',
        },
      });
    }
    expect(executes).toHaveLength(1);
  });

  it('stores a streamed response once it completed', async () => {
    const chunk = (content: string, finish: string | null = null) => ({
      json: JSON.stringify({
        id: 'c',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'plain',
        choices: [{ index: 0, delta: { content }, finish_reason: finish }],
      }),
      finishes: finish !== null,
    });
    events = [
      { start: { model_id: 'plain', provider: 'openai-compatible', attempts: [] }, rendered: { chunks: [chunk('Par'), chunk('is.')], text: 'Paris.' } },
      { rendered: { chunks: [chunk('', 'stop')], text: '' } },
      { end: { usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }, provider: 'openai-compatible', model_id: 'plain', attempts: [] } },
    ] as unknown as ExecuteStreamEventOutput[];
    const streamedReply = await send('POST', '/v1/responses', { model: 'plain', input: 'Capital of France?', stream: true });
    expect(streamedReply.statusCode).toBe(200);
    const completed = streamedReply.body
      .split('\n\n')
      .filter((block) => block.startsWith('event: response.completed'))
      .map((block) => JSON.parse(block.split('\n')[1]!.slice('data: '.length)).response)[0];
    await stored(1);
    expect(JSON.parse(puts[0]!.response_json!)).toEqual(completed);
    expect(completed).toMatchObject({ status: 'completed', output: [{ type: 'message', content: [{ text: 'Paris.' }] }] });
  });

  it('reads a stored response back and deletes it, for its key only; 404 in OpenAI envelope otherwise', async () => {
    const created = (await send('POST', '/v1/responses', { model: 'plain', input: 'Capital of France?' })).json();
    await stored(1);
    const read = await send('GET', `/v1/responses/${created.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual(created);
    expect((await send('GET', `/v1/responses/${created.id}`, undefined, OTHER_KEY)).statusCode).toBe(404);
    expect((await send('DELETE', `/v1/responses/${created.id}`, undefined, OTHER_KEY)).statusCode).toBe(404);
    const deleted = await send('DELETE', `/v1/responses/${created.id}`);
    expect(deleted.json()).toEqual({ id: created.id, object: 'response', deleted: true });
    const gone = await send('GET', `/v1/responses/${created.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json()).toEqual({
      error: { message: `Response with id '${created.id}' not found.`, type: 'invalid_request_error', param: null, code: 'not_found' },
    });
  });

  it('answers all the same when the store fails, and counts the failure', async () => {
    const failing = (_request: unknown, _metadata: unknown, _options: unknown, callback: (error: Error) => void) =>
      setImmediate(() => callback(Object.assign(new Error('14 UNAVAILABLE: connect refused'), { code: 14, details: 'connect refused' })));
    Object.assign(deps.responseStore, { PutResponse: failing });
    const created = await send('POST', '/v1/responses', { model: 'plain', input: 'Capital of France?' });
    expect(created.statusCode).toBe(200);
    expect(created.json()).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'Paris.' }] }] });
    let metric = '';
    for (let tries = 0; !metric.includes('outcome="failed"} 1') && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      metric = await deps.registry.getSingleMetricAsString('gateway_responses_store_total');
    }
    expect(metric).toContain('outcome="failed"} 1');
    expect(metric).toContain('outcome="stored"} 0');
  });
});

describe('a shutting-down edge', () => {
  /** A store whose puts wait until the test releases them (or never, with `hang`). */
  function slowStore(hang: boolean) {
    const released: Array<() => void> = [];
    const puts: string[] = [];
    const responseStore = {
      PutResponse(request: PutResponseRequest, _metadata: unknown, _options: unknown, callback: (error: Error | null, response?: unknown) => void) {
        released.push(() => {
          puts.push(request.response_id!);
          callback(null, { outcome: 'PUT_OUTCOME_STORED', ttl_seconds: 60 });
        });
      },
    };
    const config = readEdgeConfig({});
    const store = new ResponsesStore({
      config,
      logger: createLogger('edge-test', 'silent'),
      registry: new prometheus.Registry(),
      responseStore,
    } as unknown as EdgeDependencies);
    const release = () => {
      if (!hang) for (const put of released.splice(0)) put();
    };
    return { store, puts, release, released };
  }

  it('waits for the responses it is still storing before it lets the channel close', async () => {
    const { store, puts, release, released } = slowStore(false);
    store.put(KEY_ID, { id: 'resp_1' }, [], 'req_1');
    store.put(KEY_ID, { id: 'resp_2' }, [], 'req_2');
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toHaveLength(2);
    const flushed = store.flush(5_000);
    setTimeout(release, 50);
    expect(await flushed).toBe(0);
    expect(puts.sort()).toEqual(['resp_1', 'resp_2']);
  });

  it('gives up after its timeout on a put that never ends, and says how many', async () => {
    const { store } = slowStore(true);
    store.put(KEY_ID, { id: 'resp_3' }, [], 'req_3');
    const started = Date.now();
    expect(await store.flush(100)).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await slowStore(false).store.flush(100)).toBe(0);
  });
});

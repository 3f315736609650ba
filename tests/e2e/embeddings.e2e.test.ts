/**
 * POST /v1/embeddings end to end, driven by the official `openai` client (`embeddings.create`,
 * float and base64, `dimensions`) and LangChain's OpenAIEmbeddings: the simulated embedding model
 * of the default catalog, an OpenAI-compatible and a Gemini embedding model each served by a fake
 * upstream that checks the key as the provider does (a bearer token; `x-goog-api-key`) and takes
 * at most its documented batch, so a large input is split upstream and joined back in order. What
 * a user notices: the vectors, their order, their length, the usage and the cost to the
 * pico-dollar, the same in GET /v1/usage; a chat model refused on /v1/embeddings and an embedding
 * model refused on chat, responses and messages, each in its API's envelope; bad bodies refused
 * with the field named; the key's tokens per minute counting embedding tokens.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { OpenAIEmbeddings } from '@langchain/openai';
import { costPicoUsd, DEFAULT_CATALOG_PATH, picoUsdToUsd, usdPerMtokToMicro } from '@gateway/catalog';
import { eventually, fakeGeminiEmbeddings, fakeOpenAiEmbeddings, fakeVectorOf, startFakeUpstream, type FakeUpstream } from '@gateway/testing';
import type { UsageResult } from '../../services/edge/src/routes/admin/admin-api-schemas.js';
import { hostileEmbeddingBodies, sendHostileBodies } from './hostile-bodies.js';
import { createKey } from './admin-keys.js';
import { stopInOrder } from './teardown.js';
import { metric, openAiEmbeddingEntry, SIM_MINI_ENTRY, startCluster, writeCatalog, type Cluster } from './cluster.js';

const KEY_VARIABLE = 'FAKE_EMBEDDINGS_API_KEY';
const KEY = 'sk-fake-embeddings-0123456789abcdef';
const ADMIN_TOKEN = 'admin-token-for-the-embeddings-tests-0123456789';

/** The default catalog's simulated embedding model, its entry as shipped (what a fresh start serves). */
const SIM_ENTRY = (() => {
  const entry = /^ {2}- id: sim-embedding\n(?: {4}.*\n)+/m.exec(readFileSync(DEFAULT_CATALOG_PATH, 'utf8'))?.[0];
  if (!entry) throw new Error('the default catalog has no sim-embedding model');
  return entry.trimEnd();
})();

let openAiUpstream: FakeUpstream;
let geminiUpstream: FakeUpstream;
let cluster: Cluster;
let client: OpenAI;
let origin: string;

function catalogFile(): string {
  return writeCatalog('embeddings-e2e', [
    SIM_MINI_ENTRY,
    SIM_ENTRY,
    // Three inputs a call at most (the catalog's batch_size over OpenAI's 2048), so 7 take 3 calls.
    openAiEmbeddingEntry('fake-embedding', openAiUpstream.baseUrl, KEY_VARIABLE, { inputPrice: '0.13', dimensions: 8, batchSize: 3 }),
    // Priced at 1 USD per million input tokens: a request of 10 tokens (the fake counts words) costs 10 micro-dollars.
    openAiEmbeddingEntry('budget-embedding', openAiUpstream.baseUrl, KEY_VARIABLE, { inputPrice: '1', dimensions: 8 }),
    `  - id: fake-gemini-embedding
    provider: gemini
    kind: embedding
    owned_by: tests
    created: 1735689600
    upstream: { model: gemini-embedding-001, base_url: "${new URL(geminiUpstream.baseUrl).origin}", api_key_env: ${KEY_VARIABLE} }
    pricing: { input: "0.15" }
    context_window: 2048
    embedding: { dimensions: 8, shortenable: true }`,
  ]);
}

/** The model's one row on GET /v1/usage (grouped by model), once `requests` of its requests are metered. */
async function meteredRow(model: string, requests: number, apiKey = cluster.apiKey): Promise<UsageResult> {
  const start = Math.floor(Date.now() / 1000) - 3_600;
  return eventually(async () => {
    const response = await fetch(`${origin}/v1/usage?start=${start}&bucket=day&group_by=model`, { headers: { authorization: `Bearer ${apiKey}` } });
    const page = (await response.json()) as { data: Array<{ results: UsageResult[] }> };
    const found = page.data.flatMap((bucket) => bucket.results).filter((entry) => entry.model === model);
    return found.length === 1 && found[0]!.requests === requests && found[0];
  }, `the ${requests} requests of ${model} to be metered`);
}

/** POSTs a JSON body to an API path of the gateway with a key. */
function post(path: string, body: unknown, apiKey = cluster.apiKey): Promise<Response> {
  return fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'x-api-key': apiKey, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
  });
}

/** The euclidean length of a vector. */
function norm(vector: readonly number[]): number {
  return Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
}

/** The values of a base64 embedding (little-endian float32, as OpenAI sends it). */
function fromBase64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
}

/** The cost the gateway reports for prompt tokens at a price per million. */
function costOf(promptTokens: number, inputPrice: string): number {
  return picoUsdToUsd(
    costPicoUsd({ input_micro_usd_per_mtok: usdPerMtokToMicro(inputPrice), output_micro_usd_per_mtok: 0 } as never, { prompt_tokens: promptTokens }),
  );
}

type WithGateway = { gateway: { routed_to: string; latency_ms: number; cost_usd: number } };

beforeAll(async () => {
  openAiUpstream = await startFakeUpstream(fakeOpenAiEmbeddings({ key: KEY }));
  geminiUpstream = await startFakeUpstream(fakeGeminiEmbeddings({ key: KEY }));
  cluster = await startCluster({ env: { CATALOG_PATH: catalogFile(), [KEY_VARIABLE]: KEY, EDGE_ADMIN_TOKEN: ADMIN_TOKEN } });
  origin = cluster.baseUrl.replace(/\/v1$/, '');
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(() => stopInOrder(cluster, openAiUpstream, geminiUpstream));

describe('the simulated embedding model', () => {
  it('embeds with the openai client: one unit vector per input, the same text the same vector, usage and cost', async () => {
    const texts = ['The cat sat on the mat.', 'A dog barked at the mailman.', 'The cat sat on the mat.'];
    const response = await client.embeddings.create({ model: 'sim-embedding', input: texts });
    expect(response.object).toBe('list');
    expect(response.model).toBe('sim-embedding');
    expect(response.data.map((item) => [item.object, item.index, item.embedding.length])).toEqual([
      ['embedding', 0, 1536],
      ['embedding', 1, 1536],
      ['embedding', 2, 1536],
    ]);
    for (const item of response.data) expect(norm(item.embedding)).toBeCloseTo(1, 5);
    expect(response.data[2]!.embedding).toEqual(response.data[0]!.embedding);
    expect(response.data[1]!.embedding).not.toEqual(response.data[0]!.embedding);
    expect(response.usage.prompt_tokens).toBeGreaterThan(10);
    expect(response.usage.total_tokens).toBe(response.usage.prompt_tokens);
    const gateway = (response as unknown as WithGateway).gateway;
    expect(gateway.routed_to).toBe('sim-embedding');
    expect(gateway.latency_ms).toBeGreaterThan(0);
    expect(gateway.cost_usd).toBe(costOf(response.usage.prompt_tokens, '0.02'));
  });

  it('sends the same float32 values as JSON numbers and as base64, and a fresh request gives them again', async () => {
    const input = 'Retrieval needs stable vectors.';
    // The client asks for base64 and decodes it when the caller names no encoding.
    const decoded = await client.embeddings.create({ model: 'sim-embedding', input });
    const floats = await client.embeddings.create({ model: 'sim-embedding', input, encoding_format: 'float' });
    const raw = await client.embeddings.create({ model: 'sim-embedding', input, encoding_format: 'base64' });
    expect(typeof raw.data[0]!.embedding).toBe('string');
    expect(fromBase64(raw.data[0]!.embedding as unknown as string)).toEqual(floats.data[0]!.embedding);
    expect(decoded.data[0]!.embedding).toEqual(floats.data[0]!.embedding);
  });

  it('shortens to `dimensions`: the leading values of the whole vector at unit length', async () => {
    const input = ['Shorter vectors for a smaller index.'];
    const whole = (await client.embeddings.create({ model: 'sim-embedding', input, encoding_format: 'float' })).data[0]!.embedding;
    const short = (await client.embeddings.create({ model: 'sim-embedding', input, dimensions: 256, encoding_format: 'float' })).data[0]!.embedding;
    expect(short).toHaveLength(256);
    expect(norm(short)).toBeCloseTo(1, 5);
    const scale = norm(whole.slice(0, 256));
    for (const [index, value] of short.entries()) expect(value).toBeCloseTo(whole[index]! / scale, 6);
  });

  it('embeds token-id inputs, one input or several', async () => {
    const one = await client.embeddings.create({ model: 'sim-embedding', input: [9906, 1917, 0], encoding_format: 'float' });
    const several = await client.embeddings.create({
      model: 'sim-embedding',
      input: [
        [9906, 1917, 0],
        [40, 1097],
      ],
      encoding_format: 'float',
    });
    expect(one.usage.prompt_tokens).toBe(3);
    expect(several.usage.prompt_tokens).toBe(5);
    expect(several.data[0]!.embedding).toEqual(one.data[0]!.embedding);
    expect(several.data).toHaveLength(2);
  });

  it('ranks texts that share words nearer, through LangChain', async () => {
    const embeddings = new OpenAIEmbeddings({ model: 'sim-embedding', apiKey: cluster.apiKey, configuration: { baseURL: cluster.baseUrl }, maxRetries: 0 });
    const documents = await embeddings.embedDocuments(['refund policy for orders', 'the weather in Lisbon today']);
    const query = await embeddings.embedQuery('what is the refund policy');
    const dot = (a: number[], b: number[]) => a.reduce((sum, value, index) => sum + value * b[index]!, 0);
    expect(documents).toHaveLength(2);
    expect(query).toHaveLength(1536);
    expect(dot(query, documents[0]!)).toBeGreaterThan(dot(query, documents[1]!));
  });
});

describe('an OpenAI-compatible embedding model', () => {
  it('splits inputs past the batch upstream with the bearer key, joins them in order and bills the upstream usage', async () => {
    const before = openAiUpstream.requests.length;
    const texts = Array.from({ length: 7 }, (_, index) => `document number ${index} of the batch`);
    const response = await client.embeddings.create({ model: 'fake-embedding', input: texts, encoding_format: 'float', user: 'user-42' });
    const sent = openAiUpstream.requests.slice(before);
    expect(sent.map((request) => (request.body.input as string[]).length)).toEqual([3, 3, 1]);
    for (const request of sent) {
      expect(request.path).toBe('/v1/embeddings');
      expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(request.body).toMatchObject({ model: 'text-embedding-3-small', encoding_format: 'base64', user: 'user-42' });
    }
    expect(response.data.map((item) => item.embedding)).toEqual(texts.map((text) => fakeVectorOf(text, 8)));
    // The fake counts a token per word: 6 words each.
    expect(response.usage).toEqual({ prompt_tokens: 42, total_tokens: 42 });
    expect((response as unknown as WithGateway).gateway.cost_usd).toBe(costOf(42, '0.13'));
  });

  it('passes `dimensions` and token ids through, and serves LangChain', async () => {
    const before = openAiUpstream.requests.length;
    const short = await client.embeddings.create({ model: 'fake-embedding', input: [[1, 2, 3]], dimensions: 4 });
    expect(openAiUpstream.requests.at(-1)?.body).toMatchObject({ input: [[1, 2, 3]], dimensions: 4 });
    expect(short.data[0]!.embedding).toEqual(fakeVectorOf('1 2 3', 4));
    const embeddings = new OpenAIEmbeddings({ model: 'fake-embedding', apiKey: cluster.apiKey, configuration: { baseURL: cluster.baseUrl }, maxRetries: 0 });
    expect(await embeddings.embedQuery('hello there')).toEqual(fakeVectorOf('hello there', 8));
    expect(openAiUpstream.requests.length).toBe(before + 2);
  });

  it('meters the tokens and the cost to the pico-dollar in the usage API', async () => {
    const { secret: fresh, id: freshId } = await createKey(origin, ADMIN_TOKEN, { plan: 'pro' });
    const keyed = new OpenAI({ baseURL: cluster.baseUrl, apiKey: fresh, maxRetries: 0 });
    const first = await keyed.embeddings.create({ model: 'fake-embedding', input: ['one two three', 'four five'] });
    const second = await keyed.embeddings.create({ model: 'fake-embedding', input: 'six seven eight nine' });
    const tokens = first.usage.prompt_tokens + second.usage.prompt_tokens;
    expect(tokens).toBe(9);
    const row = await meteredRow('fake-embedding', 2, fresh);
    expect(row).toMatchObject({ requests: 2, prompt_tokens: 9, completion_tokens: 0, errors: 0 });
    const pico = costPicoUsd({ input_micro_usd_per_mtok: usdPerMtokToMicro('0.13'), output_micro_usd_per_mtok: 0 } as never, { prompt_tokens: 9 });
    expect(row.cost_pico_usd).toBe(String(pico));
    expect(row.cost_usd).toBe(picoUsdToUsd(pico));
    // The latest requests (the console's Requests page) say which API each was.
    const latest = (await (
      await fetch(`${origin}/admin/v1/requests?limit=50&key_id=${freshId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).json()) as { data: Array<{ key_id: string; operation: string; prompt_tokens: number; completion_tokens: number }> };
    const mine = latest.data.filter((entry) => entry.key_id === freshId);
    expect(mine.map((entry) => [entry.operation, entry.prompt_tokens, entry.completion_tokens])).toEqual([
      ['embeddings', 4, 0],
      ['embeddings', 5, 0],
    ]);
  });

  it("is counted in the GenAI metrics under the embeddings operation, and in the executor's", async () => {
    const labels = { gen_ai_operation_name: 'embeddings', gen_ai_request_model: 'fake-embedding', gen_ai_token_type: 'input' };
    const edgeMetrics = `http://127.0.0.1:${cluster.ports.edgeMetrics}/metrics`;
    const before = await metric(edgeMetrics, 'gen_ai_client_token_usage_sum', labels);
    const answer = await client.embeddings.create({ model: 'fake-embedding', input: 'alpha beta gamma' });
    expect(await metric(edgeMetrics, 'gen_ai_client_token_usage_sum', labels)).toBe(before + answer.usage.prompt_tokens);
    expect(
      await metric(`http://127.0.0.1:${cluster.ports.executorMetrics}/metrics`, 'gateway_executor_requests_total', { model: 'fake-embedding', outcome: 'ok' }),
    ).toBeGreaterThan(0);
  });
});

describe('a Gemini embedding model', () => {
  it('uses embedContent for one input and batchEmbedContents of at most 100 for more, with x-goog-api-key', async () => {
    const before = geminiUpstream.requests.length;
    const one = await client.embeddings.create({ model: 'fake-gemini-embedding', input: 'a single text', encoding_format: 'float' });
    expect(one.data[0]!.embedding).toEqual(fakeVectorOf('a single text', 8));
    const texts = Array.from({ length: 150 }, (_, index) => `passage ${index}`);
    const many = await client.embeddings.create({ model: 'fake-gemini-embedding', input: texts, dimensions: 4 });
    const sent = geminiUpstream.requests.slice(before);
    expect(sent.map((request) => request.path)).toEqual([
      '/v1beta/models/gemini-embedding-001:embedContent',
      '/v1beta/models/gemini-embedding-001:batchEmbedContents',
      '/v1beta/models/gemini-embedding-001:batchEmbedContents',
    ]);
    expect(sent.map((request) => request.headers['x-goog-api-key'])).toEqual([KEY, KEY, KEY]);
    expect(
      sent
        .slice(1)
        .map((request) => (request.body.requests as unknown[]).length)
        .sort(),
    ).toEqual([100, 50]);
    expect(sent[1]!.body.requests).toContainEqual({
      model: 'models/gemini-embedding-001',
      content: { parts: [{ text: 'passage 0' }] },
      outputDimensionality: 4,
    });
    expect(many.data.map((item) => item.embedding)).toEqual(texts.map((text) => fakeVectorOf(text, 4)));
    // Gemini reports no token count: the gateway counts the inputs.
    expect(many.usage.prompt_tokens).toBeGreaterThanOrEqual(300);
    expect((many as unknown as WithGateway).gateway.cost_usd).toBe(costOf(many.usage.prompt_tokens, '0.15'));
  });

  it('refuses token ids before any call: the model takes text', async () => {
    const before = geminiUpstream.requests.length;
    const failure = await client.embeddings.create({ model: 'fake-gemini-embedding', input: [[1, 2]] }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
    expect((failure as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('input');
    expect(geminiUpstream.requests.length).toBe(before);
  });
});

describe('kinds of models', () => {
  it('refuses a chat model on /v1/embeddings', async () => {
    const failure = await client.embeddings.create({ model: 'sim-mini', input: 'hello' }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
    const error = failure as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error.param).toBe('model');
    expect(error.message).toContain('`sim-mini` is a chat model and does not produce embeddings');
  });

  it('refuses an embedding model on chat completions, responses and messages, each in its envelope', async () => {
    const chat = await client.chat.completions.create({ model: 'sim-embedding', messages: [{ role: 'user', content: 'hi' }] }).catch((error: unknown) => error);
    expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
    expect((chat as Error).message).toContain('`sim-embedding` is an embedding model');
    const responses = await post('/v1/responses', { model: 'sim-embedding', input: 'hi' });
    expect(responses.status).toBe(400);
    expect(await responses.json()).toMatchObject({ error: { type: 'invalid_request_error', param: 'model' } });
    const messages = await post('/v1/messages', { model: 'sim-embedding', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    expect(messages.status).toBe(400);
    expect(await messages.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('lists the embedding models beside the chat models', async () => {
    const ids = (await client.models.list()).data.map((model) => model.id);
    expect(ids).toEqual(expect.arrayContaining(['sim-mini', 'sim-embedding', 'fake-embedding', 'fake-gemini-embedding']));
  });
});

describe('bad bodies', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['no input', { model: 'sim-embedding' }, 'input'],
    ['an empty string', { model: 'sim-embedding', input: '' }, 'input'],
    ['an empty list', { model: 'sim-embedding', input: [] }, 'input'],
    ['an empty string among texts', { model: 'sim-embedding', input: ['a', ''] }, 'input[1]'],
    ['too many inputs', { model: 'sim-embedding', input: Array.from({ length: 2049 }, () => 'x') }, 'input'],
    ['a token id that is no integer', { model: 'sim-embedding', input: [1, 2.5] }, 'input[1]'],
    ['a negative token id', { model: 'sim-embedding', input: [[1], [-3]] }, 'input[1][0]'],
    ['a text among token arrays', { model: 'sim-embedding', input: [[1], 'two'] }, 'input[1]'],
    ['dimensions of 0', { model: 'sim-embedding', input: 'a', dimensions: 0 }, 'dimensions'],
    ['dimensions as text', { model: 'sim-embedding', input: 'a', dimensions: '64' }, 'dimensions'],
    ['dimensions past the model', { model: 'sim-embedding', input: 'a', dimensions: 4096 }, 'dimensions'],
    ['an unknown encoding', { model: 'sim-embedding', input: 'a', encoding_format: 'int8' }, 'encoding_format'],
    ['an unknown field', { model: 'sim-embedding', input: 'a', temperature: 1 }, 'temperature'],
    ['auto', { model: 'auto', input: 'a' }, 'model'],
  ];
  it.each(cases)('refuses %s with a 400 naming the field', async (_name, body, param) => {
    const response = await post('/v1/embeddings', body);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', param } });
  });

  it("answers 400 hostile bodies with a 200 or an error in OpenAI's envelope, never a 5xx", async () => {
    const bodies = [...hostileEmbeddingBodies(400, ['sim-embedding', 'fake-embedding', 'fake-gemini-embedding', 'sim-mini'])];
    const statuses = await sendHostileBodies(bodies, (body) =>
      fetch(`${origin}/v1/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' }, body }),
    );
    expect(statuses.get(400)).toBeGreaterThan(100);
    expect(statuses.get(200)).toBeGreaterThan(0);
  });

  it('refuses an input longer than the model takes', async () => {
    const response = await post('/v1/embeddings', { model: 'fake-gemini-embedding', input: ['short', 'word '.repeat(3_000)] });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { param: 'input[1]', code: 'context_length_exceeded' } });
  });
});

describe('limits', () => {
  it("counts embedding tokens against the key's tokens per minute", async () => {
    const { secret } = await createKey(origin, ADMIN_TOKEN, { plan: 'pro', limits: { tokens_per_minute: 1_000 } });
    // 3,000 bytes: reserved as 750 tokens, then settled with the ~500 the model counts.
    const input = 'lorem '.repeat(500);
    const first = await post('/v1/embeddings', { model: 'sim-embedding', input }, secret);
    expect(first.status).toBe(200);
    const used = ((await first.json()) as { usage: { prompt_tokens: number } }).usage.prompt_tokens;
    expect(used).toBeGreaterThan(400);
    expect(Number(first.headers.get('x-ratelimit-remaining-tokens'))).toBeLessThanOrEqual(1_000 - 700);
    const second = await post('/v1/embeddings', { model: 'sim-embedding', input }, secret);
    // OpenAI's tokens-per-minute refusal: type `tokens`.
    expect(second.status).toBe(429);
    expect(await second.json()).toMatchObject({ error: { type: 'tokens', code: 'rate_limit_exceeded' } });
  });
});

describe('allow-lists', () => {
  it("refuses an embedding model outside the key's allow-list with 403 model_not_allowed, and serves one inside it", async () => {
    const { secret } = await createKey(origin, ADMIN_TOKEN, { plan: 'pro', allowed_models: ['sim-mini', 'fake-embedding'] });
    const refused = await post('/v1/embeddings', { model: 'sim-embedding', input: 'hello' }, secret);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { type: 'permission_error', code: 'model_not_allowed', param: 'model' } });
    expect((await post('/v1/embeddings', { model: 'fake-embedding', input: 'hello' }, secret)).status).toBe(200);
  });
});

describe('budgets', () => {
  it("spends a key's daily budget with embeddings, then refuses with 429 insufficient_quota", async () => {
    const { secret } = await createKey(origin, ADMIN_TOKEN, { plan: 'pro', budgets: { daily_usd: 0.00003 } });
    const input = 'one two three four five six seven eight nine ten';
    for (let index = 0; index < 3; index += 1) {
      const answer = await post('/v1/embeddings', { model: 'budget-embedding', input }, secret);
      expect(answer.status).toBe(200);
      expect(((await answer.json()) as WithGateway).gateway.cost_usd).toBe(0.00001);
      // Each answer metered before the next request: the budget is exact against what was spent.
      await meteredRow('budget-embedding', index + 1, secret);
    }
    const refused = await post('/v1/embeddings', { model: 'budget-embedding', input }, secret);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { type: 'insufficient_quota', code: 'insufficient_quota' } });
    expect(refused.headers.get('x-gateway-budget-remaining-usd')).toBe('0');
  });
});

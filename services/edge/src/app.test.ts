/**
 * The edge app through fastify's inject(), with the services behind it faked through the edge's
 * own interfaces (auth decisions, executor calls, the catalog view, the usage publisher): what a
 * caller of POST /v1/chat/completions sees, and what the edge sends to auth, the executor and
 * metering, without a port or a peer process.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import { GatewayError } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import type { CheckKeyRequest, CheckKeyResponseOutput, ExecuteRequest, ExecuteResponseOutput, ExecuteStreamEventOutput, UsageEvent } from '@gateway/proto';
import { buildEdgeApp } from './app.js';
import type { CompletionWire } from './completions/completion.js';
import { CompletionPipeline } from './completions/completion-pipeline.js';
import { readEdgeConfig } from './config.js';
import type { EdgeDependencies } from './dependencies.js';
import { allowDecision, catalogOf, fakeDecisions, TEST_KEY_ID, testModel, wholeAnswer } from './testing/edge-fakes.js';
import { parseChatRequest } from './wire/parse-chat-request.js';

const KEY = `br-${'k'.repeat(40)}`;
const model = testModel;

const allow = allowDecision(TEST_KEY_ID, {
  budget: { limited: true, remaining_pico_usd: 5_000_000, spent_today_pico_usd: 0, spent_month_pico_usd: 0, monthly_exhausted: false },
} as Partial<CheckKeyResponseOutput>);

const answer = wholeAnswer('up-model', 'Hello!', 5);

/** What the fakes saw, and how they answer. */
interface Fakes {
  decision: CheckKeyResponseOutput | Error;
  checks: CheckKeyRequest[];
  executes: ExecuteRequest[];
  whole: ExecuteResponseOutput | Error;
  events: ExecuteStreamEventOutput[];
  published: UsageEvent[];
}

let app: FastifyInstance;
let fakes: Fakes;
let deps: EdgeDependencies;

beforeEach(async () => {
  fakes = { decision: allow, checks: [], executes: [], whole: answer, events: [], published: [] };
  const models = [
    model('plain'),
    model('tooled', { capabilities: { tools: true, vision: false, streaming: true, json_mode: false } }),
    model('down', { available: false, retry_after_ms: 3_000 }),
  ];
  deps = {
    config: readEdgeConfig({ EDGE_ADMIN_TOKEN: '' }),
    logger: createLogger('edge-test', 'silent'),
    registry: new prometheus.Registry(),
    decisions: fakeDecisions(fakes.checks, () => fakes.decision),
    completions: {
      call: async (_method: string, request: ExecuteRequest) => {
        fakes.executes.push(request);
        if (fakes.whole instanceof Error) throw fakes.whole;
        return fakes.whole;
      },
      stream: (_method: string, request: ExecuteRequest) => {
        fakes.executes.push(request);
        const events = fakes.events;
        return (async function* () {
          yield* events;
        })();
      },
    },
    catalog: catalogOf(models),
    usage: { publish: (event: UsageEvent) => fakes.published.push(event) },
    ready: async () => true,
  } as unknown as EdgeDependencies;
  app = await buildEdgeApp(deps);
});

afterEach(async () => {
  await app.close();
});

const complete = (body: Record<string, unknown>, key: string | null = KEY) =>
  app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    payload: JSON.stringify(body),
  });
const hello = [{ role: 'user', content: 'Hello there' }];

describe('POST /v1/chat/completions', () => {
  it('answers a whole completion with the gateway object, its price and the limits, and reports its usage once', async () => {
    const response = await complete({ model: 'plain', messages: hello });
    expect(response.statusCode).toBe(200);
    const body = response.json() as { object: string; choices: Array<{ message: { content: string } }>; gateway: Record<string, unknown> };
    // 10 prompt tokens at 1 USD and 5 completion tokens at 2 USD per million.
    expect(body).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { content: 'Hello!' } }],
      gateway: { routed_to: 'plain', cost_usd: 0.00002 },
    });
    expect(response.headers).toMatchObject({
      'x-ratelimit-limit-requests': '1000',
      'x-ratelimit-remaining-requests': '999',
      'x-gateway-budget-remaining-usd': '0.000005',
    });
    expect(fakes.checks).toEqual([expect.objectContaining({ api_key: KEY, check_only: false })]);
    expect(fakes.executes).toEqual([expect.objectContaining({ model_id: 'plain', key_id: 'key_AAAAAAAAAAAAAAAA', fallbacks: [] })]);
    expect(fakes.published).toEqual([
      expect.objectContaining({
        key_id: 'key_AAAAAAAAAAAAAAAA',
        model_id: 'plain',
        outcome: 'OUTCOME_COMPLETED',
        reservation_id: 'key_AAAAAAAAAAAAAAAA:r1',
        reported_cost_pico_usd: 20_000_000,
      }),
    ]);
  });

  it("streams the executor's chunks as SSE, the gateway object on the last chunk before [DONE]", async () => {
    const chunk = (content: string, finish = false) => ({
      json: JSON.stringify({
        id: 'chatcmpl-2',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'plain',
        choices: [{ index: 0, delta: { content }, finish_reason: finish ? 'stop' : null }],
      }),
      finishes: finish,
    });
    fakes.events = [
      { start: { model_id: 'plain', provider: 'openai-compatible', attempts: [] }, rendered: { chunks: [chunk('Hel'), chunk('lo')], text: 'Hello' } },
      { rendered: { chunks: [chunk('', true)], text: '' } },
      { end: { usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }, provider: 'openai-compatible', model_id: 'plain', attempts: [] } },
    ] as unknown as ExecuteStreamEventOutput[];
    const response = await complete({ model: 'plain', messages: hello, stream: true });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
    const data = response.body
      .split('\n\n')
      .filter((event) => event.startsWith('data: '))
      .map((event) => event.slice(6));
    expect(data.at(-1)).toBe('[DONE]');
    expect(JSON.parse(data.at(-2)!)).toMatchObject({ choices: [{ finish_reason: 'stop' }], gateway: { routed_to: 'plain' } });
    expect(data.slice(0, 2).map((json) => JSON.parse(json).choices[0].delta.content)).toEqual(['Hel', 'lo']);
    expect(fakes.published).toEqual([
      expect.objectContaining({ outcome: 'OUTCOME_COMPLETED', stream: true, usage: expect.objectContaining({ completion_tokens: 2 }) }),
    ]);
  });

  it('lists the models in Anthropic’s format to a request naming its version, its key in x-api-key, errors in Anthropic’s envelope', async () => {
    const get = (url: string, headers: Record<string, string>) =>
      app.inject({ method: 'GET', url, headers: { 'anthropic-version': '2023-06-01', ...headers } });
    const listed = await get('/v1/models?limit=2', { 'x-api-key': KEY });
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual({
      data: [
        { type: 'model', id: 'plain', display_name: 'plain', created_at: '1970-01-01T00:00:00.000Z' },
        { type: 'model', id: 'tooled', display_name: 'tooled', created_at: '1970-01-01T00:00:00.000Z' },
      ],
      first_id: 'plain',
      last_id: 'tooled',
      has_more: true,
    });
    expect((await get('/v1/models?after_id=tooled', { 'x-api-key': KEY })).json()).toMatchObject({ data: [{ id: 'down' }], has_more: false });
    expect((await get('/v1/models?before_id=down&limit=1', { 'x-api-key': KEY })).json()).toMatchObject({ data: [{ id: 'tooled' }], has_more: true });
    expect((await get('/v1/models/plain', { authorization: `Bearer ${KEY}` })).json()).toMatchObject({ type: 'model', id: 'plain' });
    const unknown = await get('/v1/models/nope', { 'x-api-key': KEY });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const keyless = await get('/v1/models', {});
    expect(keyless.statusCode).toBe(401);
    expect(keyless.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    // Without the version header: OpenAI's list, as before.
    const openAi = await app.inject({ method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${KEY}` } });
    expect(openAi.json()).toMatchObject({ object: 'list', data: [{ id: 'plain', object: 'model' }, { id: 'tooled' }, { id: 'down' }] });
    // The same page in Codex's catalog format, what model_catalog_json reads.
    expect(openAi.json().models).toEqual([
      expect.objectContaining({ slug: 'plain', context_window: 8_000, supports_parallel_tool_calls: false, input_modalities: ['text'], priority: 0 }),
      expect.objectContaining({ slug: 'tooled', supports_parallel_tool_calls: true, shell_type: 'shell_command', visibility: 'list' }),
      expect.objectContaining({ slug: 'down', base_instructions: expect.stringContaining('coding agent') }),
    ]);
    const anthropicList = await get('/v1/models', { 'x-api-key': KEY });
    expect(anthropicList.json()).not.toHaveProperty('models');
  });

  it("refuses a request without a key before reading its body, and one auth refuses, with OpenAI's errors", async () => {
    const missing = await complete({ model: 'plain', messages: hello }, null);
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toMatchObject({ error: { code: 'missing_api_key', type: 'invalid_request_error' } });
    expect(fakes.checks).toEqual([]);

    fakes.decision = {
      decision: 'DECISION_DENY_BUDGET',
      key_id: 'key_AAAAAAAAAAAAAAAA',
      retry_after_ms: 7_200_000,
      message: 'You exceeded your current quota.',
      budget: { limited: true },
    } as CheckKeyResponseOutput;
    const broke = await complete({ model: 'plain', messages: hello });
    expect(broke.statusCode).toBe(429);
    expect(broke.json()).toMatchObject({ error: { type: 'insufficient_quota', code: 'insufficient_quota' } });
    expect(broke.headers).toMatchObject({ 'retry-after': '7200', 'x-should-retry': 'false', 'x-gateway-budget-remaining-usd': '0' });

    fakes.decision = new GatewayError(14, 'auth_unavailable', 'down');
    const down = await complete({ model: 'plain', messages: hello });
    expect(down.statusCode).toBe(503);
    expect(down.json()).toMatchObject({ error: { code: 'auth_unavailable' } });
    expect(fakes.executes).toEqual([]);
  });

  it.each(['/v1/chat/completions', '/v1/responses', '/v1/messages'])('answers a key auth refuses with 401 before the errors of its body on %s', async (url) => {
    fakes.decision = { decision: 'DECISION_DENY_INVALID_KEY', message: 'Incorrect API key provided.' } as CheckKeyResponseOutput;
    const refused = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      payload: '{"model":',
    });
    expect(refused.statusCode).toBe(401);
    expect(fakes.executes).toEqual([]);
  });

  it('refuses what the model cannot serve, and an unavailable model without fallbacks, before any executor call', async () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const refused = await complete({ model: 'plain', messages: hello, tools });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ error: { param: 'tools', code: 'unsupported_parameter' } });
    expect((await complete({ model: 'tooled', messages: hello, tools })).statusCode).toBe(200);

    const down = await complete({ model: 'down', messages: hello });
    expect(down.statusCode).toBe(503);
    expect(down.headers).toMatchObject({ 'retry-after': '3', 'retry-after-ms': '3000' });
    expect((await complete({ model: 'nope', messages: hello })).json()).toMatchObject({ error: { code: 'model_not_found', param: 'model' } });
    expect(fakes.executes.map((request) => request.model_id)).toEqual(['tooled']);
  });

  it('answers an executor failure with its registered status, and meters it as an error with no usage', async () => {
    fakes.whole = GatewayError.of('upstream_error', 'The openai-compatible upstream failed to answer.');
    const failed = await complete({ model: 'plain', messages: hello });
    expect(failed.statusCode).toBe(502);
    expect(failed.json()).toMatchObject({ error: { type: 'upstream_error', code: 'upstream_error' } });
    expect(fakes.published).toEqual([
      expect.objectContaining({
        outcome: 'OUTCOME_FAILED',
        error_code: 'upstream_error',
        reservation_id: 'key_AAAAAAAAAAAAAAAA:r1',
        usage: expect.objectContaining({ total_tokens: 0 }),
      }),
    ]);
  });
});

/**
 * Another API's wire, plugged into the same pipeline: `{model, prompt}` in, `{text, model}` or
 * `event: delta` ... `event: done` out.
 */
const promptWire: CompletionWire = {
  route: '/v1/prompt',
  operation: 'text_completion',
  parse: (body) => {
    const { model, prompt, stream } = body as { model: string; prompt: string; stream?: boolean };
    return parseChatRequest({ model, messages: [{ role: 'user', content: prompt }], stream });
  },
  renderWhole: (completion, response) => JSON.stringify({ text: response.choices[0]?.message?.content, model: completion.answered.id }),
  openStream: (completion) => ({
    named() {},
    begin(_first, head) {
      head['x-wire'] = 'prompt';
    },
    event: (json) => `event: delta\ndata: ${json}\n\n`,
    chunkJson: (chunk) => JSON.stringify(chunk),
    end: (held, usage) =>
      `${held === undefined ? '' : `event: delta\ndata: ${held}\n\n`}event: done\ndata: ${JSON.stringify({ tokens: usage?.total_tokens, model: completion.answered.id })}\n\n`,
    failure: (error) => `event: error\ndata: ${error.message}\n\n`,
  }),
  renderError: (error) => JSON.stringify({ type: 'error', message: error.message }),
};

describe('the completion pipeline', () => {
  it("serves another wire's body and answer shapes with the same admission, routing, execution and metering", async () => {
    const pipeline = new CompletionPipeline({ ...deps, registry: new prometheus.Registry() });
    const other = Fastify();
    other.post(promptWire.route, (request, reply) => pipeline.run(promptWire, request, reply));
    const send = (body: Record<string, unknown>) =>
      other.inject({ method: 'POST', url: promptWire.route, headers: { authorization: `Bearer ${KEY}` }, payload: body });

    const whole = await send({ model: 'plain', prompt: 'Hello there' });
    expect(whole.json()).toEqual({ text: 'Hello!', model: 'plain' });
    expect(whole.headers).toMatchObject({ 'x-ratelimit-remaining-requests': '999' });

    fakes.events = [
      {
        start: { model_id: 'plain', provider: 'openai-compatible', attempts: [] },
        rendered: { chunks: [{ json: '{"t":"Hi"}', finishes: false }], text: 'Hi' },
      },
      { rendered: { chunks: [{ json: '{"t":""}', finishes: true }], text: '' } },
      { end: { usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }, provider: 'openai-compatible', model_id: 'plain', attempts: [] } },
    ] as unknown as ExecuteStreamEventOutput[];
    const streamed = await send({ model: 'plain', prompt: 'Hello there', stream: true });
    expect(streamed.headers['x-wire']).toBe('prompt');
    expect(streamed.body).toBe('event: delta\ndata: {"t":"Hi"}\n\nevent: delta\ndata: {"t":""}\n\nevent: done\ndata: {"tokens":4,"model":"plain"}\n\n');

    expect(fakes.checks).toHaveLength(2);
    expect(fakes.executes.map((request) => [request.model_id, request.request?.stream])).toEqual([
      ['plain', false],
      ['plain', true],
    ]);
    expect(fakes.published).toEqual([
      expect.objectContaining({ outcome: 'OUTCOME_COMPLETED', stream: false, reservation_id: 'key_AAAAAAAAAAAAAAAA:r1' }),
      expect.objectContaining({ outcome: 'OUTCOME_COMPLETED', stream: true, usage: expect.objectContaining({ total_tokens: 4 }) }),
    ]);
    await other.close();
  });
});

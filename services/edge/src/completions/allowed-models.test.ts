/**
 * A key's model allow-lists as a caller of the edge sees them: a named model outside them refused
 * (auth's decision) in each API's own envelope, `auto` and fallback chains choosing only allowed
 * models, and the Models API listing only those. Auth and the router are faked through the
 * edge's own interfaces; the real pipeline, routes and error handler answer.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { CheckKeyRequest, CheckKeyResponseOutput, ExecuteRequest, RouteRequest, RouteResponseOutput, RouterServiceClient } from '@gateway/proto';
import type { ExecutorCalls } from '../clients/executor-calls.js';
import { testEdge } from '../testing/test-edge.js';
import { allowedRouting } from './allowed-models.js';
import { allowDecision, catalogOf, fakeDecisions, TEST_KEY_ID, testModel, wholeAnswer } from '../testing/edge-fakes.js';

const KEY = `br-${'k'.repeat(40)}`;
const headers = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
const hello = [{ role: 'user', content: 'Hello there' }];

interface Fakes {
  decision: CheckKeyResponseOutput;
  checks: CheckKeyRequest[];
  routes: RouteRequest[];
  route: RouteResponseOutput;
  executes: ExecuteRequest[];
}

let app: FastifyInstance;
let fakes: Fakes;

/** An allowing decision with these allow-lists. */
const allowing = (...lists: string[][]) => allowDecision(TEST_KEY_ID, { model_allow_lists: lists.map((models) => ({ models })) });

/** Auth's refusal of a named model, as auth words it. */
const refusing = (model: string) =>
  ({
    decision: 'DECISION_DENY_MODEL_NOT_ALLOWED',
    key_id: TEST_KEY_ID,
    message: `This API key is not allowed to use the model \`${model}\`.`,
    model_allow_lists: [{ models: ['cheap-*'] }],
  }) as CheckKeyResponseOutput;

beforeEach(async () => {
  const models = [
    testModel('cheap-a', { fallbacks: ['strong', 'cheap-b'] }),
    testModel('cheap-b'),
    testModel('strong', { fallbacks: ['cheap-b', 'cheap-a'], quality_tier: 'QUALITY_TIER_PREMIUM' }),
  ];
  fakes = {
    decision: allowing(),
    checks: [],
    routes: [],
    route: {
      model_id: 'strong',
      fallbacks: ['cheap-b', 'cheap-a'],
      ranked: ['strong', 'cheap-b', 'cheap-a'],
      policy: 'balanced',
      reason: 'r.',
    } as RouteResponseOutput,
    executes: [],
  };
  const router = {
    Route(request: RouteRequest, _metadata: unknown, _options: unknown, callback: (error: Error | null, response?: RouteResponseOutput) => void) {
      fakes.routes.push(request);
      setImmediate(() => callback(null, fakes.route));
      return { cancel() {} };
    },
  };
  app = await testEdge(
    { EDGE_ADMIN_TOKEN: '' },
    {
      decisions: fakeDecisions(fakes.checks, () => fakes.decision),
      completions: {
        call: async (_method: string, request: ExecuteRequest) => {
          fakes.executes.push(request);
          return { ...wholeAnswer(request.model_id ?? '', 'Hi', 3), model_id: request.model_id };
        },
      } as unknown as ExecutorCalls,
      catalog: catalogOf(models),
      router: router as unknown as RouterServiceClient,
      usage: { publish: () => {} },
    },
  );
});

afterEach(async () => {
  await app.close();
});

const post = (url: string, body: Record<string, unknown>, extra: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url, headers: { ...headers, ...extra }, payload: JSON.stringify(body) });

describe('a named model outside the key’s allow-list', () => {
  it('is checked in the key’s one decision and refused with a 403 model_not_allowed, before any model is called', async () => {
    fakes.decision = refusing('strong');
    const response = await post('/v1/chat/completions', { model: 'strong', messages: hello });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toEqual({
      error: { message: 'This API key is not allowed to use the model `strong`.', type: 'permission_error', param: 'model', code: 'model_not_allowed' },
    });
    expect(response.headers['x-ratelimit-remaining-requests']).toBeUndefined();
    expect(fakes.checks).toEqual([expect.objectContaining({ model: 'strong', check_only: false })]);
    expect(fakes.executes).toEqual([]);
  });

  it('is only a catalog model: any other name goes to auth as no model, and is a 404 model_not_found', async () => {
    const hostile = 'x'.repeat(3_072);
    for (const model of ['no-such-model', hostile]) {
      const response = await post('/v1/chat/completions', { model, messages: hello });
      expect(response.statusCode).toBe(404);
      expect(response.json()).toMatchObject({ error: { code: 'model_not_found', param: 'model' } });
    }
    expect(fakes.checks.map((check) => check.model)).toEqual(['', '']);
    expect(fakes.executes).toEqual([]);
  });

  it('is refused in the Responses API’s envelope and in Anthropic’s on the Messages API and count_tokens', async () => {
    fakes.decision = refusing('strong');
    const responses = await post('/v1/responses', { model: 'strong', input: 'Hello', store: false });
    expect(responses.statusCode).toBe(403);
    expect(responses.json()).toMatchObject({ error: { type: 'permission_error', code: 'model_not_allowed', param: 'model' } });
    const anthropic = { 'anthropic-version': '2023-06-01' };
    const messages = await post('/v1/messages', { model: 'strong', max_tokens: 10, messages: hello }, anthropic);
    expect(messages.statusCode).toBe(403);
    expect(messages.json()).toEqual({ type: 'error', error: { type: 'permission_error', message: 'This API key is not allowed to use the model `strong`.' } });
    const count = await post('/v1/messages/count_tokens', { model: 'strong', messages: hello }, anthropic);
    expect(count.statusCode).toBe(403);
    expect(count.json()).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    expect(fakes.checks.map((check) => check.model)).toEqual(['strong', 'strong', 'strong']);
    expect(fakes.executes).toEqual([]);
  });
});

describe('`auto` under an allow-list', () => {
  it('asks auth about no model and answers with the best-ranked model the key may use, its chain within the list', async () => {
    fakes.decision = allowing(['cheap-*']);
    const response = await post('/v1/chat/completions', { model: 'auto', messages: hello, fallbacks: true });
    expect(response.statusCode).toBe(200);
    expect(fakes.checks).toEqual([expect.objectContaining({ model: '' })]);
    expect(fakes.routes).toHaveLength(1);
    // strong is ranked first but not allowed; cheap-b is next; its chain is empty.
    expect(fakes.executes).toEqual([expect.objectContaining({ model_id: 'cheap-b', fallbacks: [] })]);
    expect(response.json()).toMatchObject({ gateway: { routed_to: 'cheap-b' } });
  });

  it('takes the router’s choice as it is when the key may use it', async () => {
    fakes.decision = allowing(['strong', 'cheap-a']);
    await post('/v1/chat/completions', { model: 'auto', messages: hello, fallbacks: true });
    expect(fakes.executes).toEqual([expect.objectContaining({ model_id: 'strong', fallbacks: ['cheap-a'] })]);
  });

  it('must satisfy every list that applies (a key’s and its team’s)', async () => {
    fakes.decision = allowing(['cheap-*', 'strong'], ['cheap-a']);
    await post('/v1/chat/completions', { model: 'auto', messages: hello });
    expect(fakes.executes).toEqual([expect.objectContaining({ model_id: 'cheap-a' })]);
  });

  it('is a 400 no_allowed_model when no capable model is allowed', async () => {
    fakes.decision = allowing(['other-*']);
    const response = await post('/v1/chat/completions', { model: 'auto', messages: hello });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'no_allowed_model', param: 'model' } });
    expect(fakes.executes).toEqual([]);
  });
});

describe('fallback chains under an allow-list', () => {
  it('skip models outside the list, from the catalog’s chain and from the caller’s own', async () => {
    fakes.decision = allowing(['cheap-a', 'cheap-b']);
    await post('/v1/chat/completions', { model: 'cheap-a', messages: hello, fallbacks: true });
    await post('/v1/chat/completions', { model: 'cheap-a', messages: hello, fallbacks: ['strong', 'cheap-b'] });
    // An id outside the list is skipped before it is looked up: no 404 tells the key it exists or not.
    await post('/v1/chat/completions', { model: 'cheap-a', messages: hello, fallbacks: ['nothing-such', 'cheap-b'] });
    expect(fakes.executes.map((execute) => execute.fallbacks)).toEqual([['cheap-b'], ['cheap-b'], ['cheap-b']]);
  });
});

describe('the Models API under an allow-list', () => {
  it('lists only the models the key may use, in OpenAI’s and Anthropic’s formats, and 404s the others', async () => {
    fakes.decision = allowing(['cheap-*']);
    const list = await app.inject({ method: 'GET', url: '/v1/models', headers });
    expect((list.json() as { data: { id: string }[] }).data.map((entry) => entry.id)).toEqual(['cheap-a', 'cheap-b']);
    const anthropic = await app.inject({ method: 'GET', url: '/v1/models', headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' } });
    expect(anthropic.json()).toMatchObject({ data: [{ id: 'cheap-a' }, { id: 'cheap-b' }], has_more: false });
    expect((await app.inject({ method: 'GET', url: '/v1/models/cheap-b', headers })).statusCode).toBe(200);
    const hidden = await app.inject({ method: 'GET', url: '/v1/models/strong', headers });
    const unknown = await app.inject({ method: 'GET', url: '/v1/models/nothing', headers });
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json()).toMatchObject({ error: { code: 'model_not_found' } });
    expect(hidden.json().error.message.replace('strong', 'X')).toBe(unknown.json().error.message.replace('nothing', 'X'));
  });

  it('lists every model for a key without a list, and none for an empty one', async () => {
    const all = await app.inject({ method: 'GET', url: '/v1/models', headers });
    expect((all.json() as { data: unknown[] }).data).toHaveLength(3);
    fakes.decision = allowing([]);
    const none = await app.inject({ method: 'GET', url: '/v1/models', headers });
    expect(none.json()).toMatchObject({ data: [], first_id: null });
  });
});

describe('allowedRouting', () => {
  const models = [testModel('a', { fallbacks: ['b'] }), testModel('b'), testModel('c', { fallbacks: ['b', 'a'] })];
  const catalog = catalogOf(models);
  const routed = (route: Partial<RouteResponseOutput>) => ({
    model: models.find((entry) => entry.id === route.model_id)!,
    route: route as RouteResponseOutput,
  });

  it('falls back on the chosen model and its fallbacks from a router that sends no ranking', () => {
    const routing = allowedRouting(catalog, routed({ model_id: 'c', fallbacks: ['b', 'a'], ranked: [], reason: 'r.' }), [['a']]);
    expect(routing.model.id).toBe('a');
    expect(routing.route).toMatchObject({ model_id: 'a', fallbacks: ['b'], reason: 'r. c is not allowed for this key: a, the best-ranked model it may use.' });
  });

  it('leaves a named model and a key without lists alone', () => {
    const named = { model: models[2]! };
    expect(allowedRouting(catalog, named, [['a']])).toBe(named);
    const auto = routed({ model_id: 'c', ranked: ['c', 'a'] });
    expect(allowedRouting(catalog, auto, [])).toBe(auto);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalog } from '@gateway/catalog';
import { callUnary, createClient, GatewayError, GrpcStatus } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { prometheus } from '@gateway/observability';
import { loadGatewayGrpc, type CatalogSnapshotOutput, type RouteRequest, type RouteResponseOutput, type RouterServiceClient } from '@gateway/proto';
import { eventually, rejectedWith } from '@gateway/testing';
import { createServer } from './app.js';
import { CatalogState } from './catalog-state.js';
import { HARD_PROMPT } from '../test/prompts.js';

const catalog = loadCatalog();
const logger = createLogger('router', 'silent');

/** A started router on a free port with a real client; the key variables switch models on. */
async function startRouter(env: Record<string, string> = {}) {
  const state = new CatalogState(catalog, env);
  const registry = new prometheus.Registry();
  const server = createServer({ state, logger, registry });
  const port = await server.listen('127.0.0.1:0');
  const client = createClient(loadGatewayGrpc().gateway.router.v1.RouterService, `127.0.0.1:${port}`);
  const route = (request: RouteRequest) =>
    callUnary<RouteRequest, RouteResponseOutput>(client, client.route, request, { deadlineMs: 5_000, requestId: 'request-1' });
  return { state, registry, server, client, route };
}

const failure = (promise: Promise<unknown>): Promise<GatewayError> => rejectedWith(GatewayError, promise);

describe('RouterService.Route over gRPC', () => {
  let router: Awaited<ReturnType<typeof startRouter>>;
  beforeAll(async () => {
    router = await startRouter({ OPENAI_API_KEY: '' });
  });
  afterEach(() => {
    for (const model of router.state.enabledModels()) router.state.setAvailability(model.id, true);
  });
  afterAll(async () => {
    router.client.close();
    await router.server.shutdown(1_000);
  });

  it('resolves an explicit id with its fallbacks', async () => {
    const response = await router.route({ request_id: 'request-1', model: 'sim-pro', traits: { prompt_tokens: 12 } });
    expect(response).toEqual({ model_id: 'sim-pro', fallbacks: ['sim-standard', 'sim-mini'], policy: 'explicit', ranked: [] });
  });

  it('drops fallbacks that are unavailable or cannot serve the request', async () => {
    router.state.setAvailability('sim-standard', false);
    expect((await router.route({ model: 'sim-pro' })).fallbacks).toEqual(['sim-mini']);
    router.state.setAvailability('sim-standard', true);
    expect((await router.route({ model: 'sim-pro', traits: { needs_vision: true } })).fallbacks).toEqual(['sim-standard']);
  });

  // An unknown id, and a catalog model whose key variable is empty: both not found, in OpenAI's words.
  it.each([
    ['an unknown id', 'gpt-5-ultra'],
    ['a catalog model whose key variable is empty', 'gpt-4o'],
  ])('answers %s with NOT_FOUND model_not_found', async (_case, model) => {
    const error = await failure(router.route({ model }));
    expect(error).toMatchObject({
      code: GrpcStatus.NOT_FOUND,
      reason: 'model_not_found',
      param: 'model',
      message: `The model \`${model}\` does not exist or you do not have access to it.`,
    });
  });

  it('refuses traits the named model cannot serve, naming the parameter', async () => {
    expect(await failure(router.route({ model: 'sim-mini', traits: { needs_vision: true } }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'unsupported_parameter',
      param: 'messages',
      message: 'The model `sim-mini` does not accept image inputs; remove the image parts or choose a model with vision.',
    });
    expect(await failure(router.route({ model: 'sim-mini', traits: { max_tokens: 5000 } }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'invalid_value',
      param: 'max_tokens',
      message: "'max_tokens' is too large: 5000. The model `sim-mini` supports at most 4096 completion tokens.",
    });
    expect(await failure(router.route({ model: 'sim-mini', traits: { prompt_tokens: 30000, max_tokens: 4000 } }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'context_length_exceeded',
      param: 'messages',
      message:
        "This model's maximum context length is 32768 tokens. However, you requested 34000 tokens (30000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.",
    });
  });

  it('refuses JSON mode on a model without it, once its provider is switched on', async () => {
    const { state, server, client, route } = await startRouter({ ANTHROPIC_API_KEY: 'sk-ant-test' });
    try {
      expect(state.enabledModel('anthropic/claude-3-5-haiku')).toBeDefined();
      expect(await failure(route({ model: 'anthropic/claude-3-5-haiku', traits: { needs_json_mode: true } }))).toMatchObject({
        code: GrpcStatus.INVALID_ARGUMENT,
        reason: 'unsupported_parameter',
        param: 'response_format',
      });
    } finally {
      client.close();
      await server.shutdown(1_000);
    }
  });

  it('answers a model marked unavailable with UNAVAILABLE model_unavailable and a retry delay', async () => {
    router.state.setAvailability('sim-standard', false);
    const error = await failure(router.route({ model: 'sim-standard' }));
    expect(error).toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      reason: 'model_unavailable',
      retryable: true,
      retryAfterMs: 5000,
      message: 'The model `sim-standard` is temporarily unavailable. Please retry later.',
    });
  });

  it('auto scores the prompt with the shipped model: the cheap model for "hi", the premium one for a long hard prompt', async () => {
    const easy = await router.route({ model: 'auto', prompt_text: 'hi', traits: { prompt_tokens: 8 } });
    expect(easy).toMatchObject({ model_id: 'sim-mini', policy: 'balanced', tier: 'economy' });
    expect(easy.score).toBeLessThan(0.05);
    const hard = await router.route({ model: 'auto', prompt_text: HARD_PROMPT, traits: { prompt_tokens: 250 } });
    expect(hard).toMatchObject({ model_id: 'sim-pro', policy: 'balanced', tier: 'premium', fallbacks: ['sim-standard', 'sim-mini'] });
    // Every capable candidate, best first, for a caller bound by an allow-list.
    expect(hard.ranked).toEqual(['sim-pro', 'sim-standard', 'sim-mini']);
    expect(easy.ranked).toEqual(['sim-mini', 'sim-standard', 'sim-pro']);
    expect(hard.score).toBeGreaterThan(0.3);
    expect(hard.reason).toMatch(
      /^score 0\.\d+ asks for premium \(standard from 0\.\d+, premium from 0\.\d+\); sim-pro \(premium tier\) among 3 capable available models\.$/,
    );
  });

  it('auto respects tools, vision and the context window', async () => {
    expect((await router.route({ model: 'auto', prompt_text: 'hi', traits: { needs_tools: true } })).model_id).toBe('sim-mini');
    expect((await router.route({ model: 'auto', prompt_text: 'hi', traits: { needs_vision: true } })).model_id).toBe('sim-standard');
    expect((await router.route({ model: 'auto', prompt_text: 'hi', traits: { prompt_tokens: 60_000, max_tokens: 8_000 } })).model_id).toBe('sim-pro');
    expect(await failure(router.route({ model: 'auto', prompt_text: 'hi', traits: { prompt_tokens: 300_000 } }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'context_length_exceeded',
      param: 'messages',
    });
  });

  it('auto honours the policy and rejects an unknown one', async () => {
    expect(await router.route({ model: 'auto', prompt_text: 'hi', policy: 'best' })).toMatchObject({ model_id: 'sim-pro', policy: 'best' });
    expect(await router.route({ model: 'auto', prompt_text: HARD_PROMPT, policy: 'cheapest' })).toMatchObject({ model_id: 'sim-mini', policy: 'cheapest' });
    expect(await router.route({ model: 'auto', prompt_text: HARD_PROMPT, policy: 'fastest' })).toMatchObject({ model_id: 'sim-mini', policy: 'fastest' });
    expect(await router.route({ model: 'auto', prompt_text: 'hi', policy: 'score >= 0' })).toMatchObject({
      model_id: 'sim-pro',
      policy: 'score>=0',
      tier: 'premium',
    });
    expect(await router.route({ model: 'auto', prompt_text: HARD_PROMPT, policy: 'score>=1' })).toMatchObject({
      model_id: 'sim-mini',
      policy: 'score>=1',
      tier: 'economy',
    });
    expect(await router.route({ model: 'auto', prompt_text: 'hi', policy: 'tier>=standard' })).toMatchObject({
      model_id: 'sim-standard',
      policy: 'tier>=standard',
    });
    expect(await failure(router.route({ model: 'auto', policy: 'smartest' }))).toMatchObject({
      code: GrpcStatus.INVALID_ARGUMENT,
      reason: 'invalid_value',
      param: 'policy',
    });
  });

  it('auto is UNAVAILABLE when every capable model is down', async () => {
    router.state.setAvailability('sim-standard', false);
    router.state.setAvailability('sim-pro', false);
    expect(await failure(router.route({ model: 'auto', prompt_text: 'hi', traits: { needs_vision: true } }))).toMatchObject({
      code: GrpcStatus.UNAVAILABLE,
      reason: 'model_unavailable',
      retryAfterMs: 5000,
    });
  });

  it('counts decisions by model and policy', async () => {
    await router.route({ model: 'sim-standard' });
    await router.route({ model: 'auto', prompt_text: 'hi', policy: 'cheapest' });
    await router.route({ model: 'auto', prompt_text: 'hi', policy: 'score>=0.5' });
    const text = await router.registry.metrics();
    expect(text).toMatch(/gateway_router_decisions_total\{model="sim-mini",policy="score_threshold"\} [1-9]/);
    expect(text).toMatch(/gateway_router_decisions_total\{model="sim-standard",policy="explicit"\} [1-9]/);
    expect(text).toMatch(/gateway_router_decisions_total\{model="sim-mini",policy="cheapest"\} [1-9]/);
  });
});

describe('RouterService.WatchCatalog over gRPC', () => {
  function watch(client: RouterServiceClient) {
    const snapshots: CatalogSnapshotOutput[] = [];
    const stream = client.watchCatalog({});
    const ended = new Promise<string>((resolve) => {
      stream.on('end', () => resolve('end'));
      stream.on('error', (error: { code?: number }) => resolve(`error ${error.code}`));
    });
    stream.on('data', (snapshot: CatalogSnapshotOutput) => snapshots.push(snapshot));
    return { stream, snapshots, ended };
  }

  it('sends the enabled models at once, pushes each change, and forgets a watcher that cancels', async () => {
    const { state, server, client } = await startRouter({ GEMINI_API_KEY: 'test-key' });
    try {
      const { stream, snapshots, ended } = watch(client);
      await eventually(() => snapshots.length === 1 || undefined, 'the first snapshot');
      expect(snapshots[0].version).toBe(1);
      expect(snapshots[0].models.map((model) => model.id)).toEqual([
        'sim-mini',
        'sim-standard',
        'sim-pro',
        'sim-embedding',
        'google/gemini-2.0-flash',
        'google/gemini-2.5-pro',
        'google/gemini-embedding-001',
      ]);
      expect(snapshots[0].models[5]).toEqual({
        id: 'google/gemini-2.5-pro',
        provider: 'gemini',
        owned_by: 'google',
        created: 1750118400,
        pricing: {
          input_micro_usd_per_mtok: 1_250_000,
          cached_input_micro_usd_per_mtok: 310_000,
          output_micro_usd_per_mtok: 10_000_000,
          cache_write_micro_usd_per_mtok: 1_250_000,
          cache_write_1h_micro_usd_per_mtok: 1_250_000,
        },
        context_window: 1048576,
        max_output_tokens: 65536,
        capabilities: { tools: true, vision: true, streaming: true, json_mode: true },
        quality_tier: 'QUALITY_TIER_PREMIUM',
        available: true,
        fallbacks: ['google/gemini-2.0-flash'],
        kind: 'MODEL_KIND_CHAT',
        revision: expect.stringMatching(/^[0-9a-f]{16}$/),
      });
      expect(snapshots[0].models[6]).toMatchObject({ id: 'google/gemini-embedding-001', kind: 'MODEL_KIND_EMBEDDING', embedding_dimensions: 3072 });

      state.setAvailability('google/gemini-2.5-pro', false);
      await eventually(() => snapshots.length === 2 || undefined, 'the pushed change');
      expect(snapshots[1].version).toBe(2);
      // proto3 leaves false booleans out of the wire message.
      expect(snapshots[1].models.find((model) => model.id === 'google/gemini-2.5-pro')?.available ?? false).toBe(false);

      expect(state.subscriberCount).toBe(1);
      stream.cancel();
      expect(await ended).toBe(`error ${GrpcStatus.CANCELLED}`);
      await eventually(() => state.subscriberCount === 0 || undefined, 'the watcher to be removed');
    } finally {
      client.close();
      await server.shutdown(1_000);
    }
  });

  it('ends open watches at shutdown instead of waiting out the grace period', async () => {
    const { state, server, client } = await startRouter();
    try {
      const { snapshots, ended } = watch(client);
      await eventually(() => snapshots.length === 1 || undefined, 'the first snapshot');
      // A grace far longer than the test may take: waiting the open watch out would fail the bound.
      const started = Date.now();
      await server.shutdown(120_000);
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(await ended).toBe('end');
      expect(state.subscriberCount).toBe(0);
    } finally {
      client.close();
    }
  });
});

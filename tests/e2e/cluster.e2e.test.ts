/**
 * The cluster end to end: the five services as separate processes, driven by the official
 * `openai` client exactly as a user would, changing only baseURL and apiKey.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { connectRedis, type RedisClient } from '@gateway/redis';
import { picoUsdToUsd } from '@gateway/catalog';
import { meteredAtLeast, quietMeteredUsage, startCluster, type Cluster } from './cluster.js';

/** A cost the gateway reported in USD, back in exact pico-USD (it is printed from an integer of them). */
const usdToPico = (usd: number) => BigInt(Math.round(usd * 1e12));

let cluster: Cluster;
let client: OpenAI;
let redis: RedisClient;

beforeAll(async () => {
  cluster = await startCluster();
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
  redis = connectRedis(cluster.redisUrl);
});

afterAll(async () => {
  await redis?.quit();
  await cluster?.stop();
});

const question = [{ role: 'user' as const, content: 'Write two sentences about the sea.' }];

describe('a whole completion', () => {
  it('answers in OpenAI shape with the gateway object', async () => {
    const completion = await client.chat.completions.create({ model: 'sim-mini', messages: question, seed: 7 });
    expect(completion.object).toBe('chat.completion');
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.choices).toHaveLength(1);
    const choice = completion.choices[0]!;
    expect(choice.message.role).toBe('assistant');
    expect(typeof choice.message.content).toBe('string');
    expect(choice.message.content!.length).toBeGreaterThan(0);
    expect(choice.finish_reason).toBe('stop');
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
    const gateway = (completion as unknown as { gateway: { routed_to: string; latency_ms: number; cost_usd: number } }).gateway;
    expect(gateway.routed_to).toBe('sim-mini');
    expect(gateway.latency_ms).toBeGreaterThan(0);
    expect(gateway.cost_usd).toBeGreaterThan(0);
  });

  it('meters the usage event with exactly the cost the response reported', async () => {
    const before = await quietMeteredUsage(redis, cluster.apiKey);
    const completion = await client.chat.completions.create({ model: 'sim-standard', messages: question, seed: 3 });
    const reported = (completion as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd;
    const after = await meteredAtLeast(redis, cluster.apiKey, before.requests + 1, { description: 'the usage event to be metered', timeoutMs: 10_000 });
    expect(after.requests - before.requests).toBe(1);
    expect(picoUsdToUsd(after.cost_pico_usd - before.cost_pico_usd)).toBe(reported);
    expect(after.prompt_tokens - before.prompt_tokens).toBe(completion.usage!.prompt_tokens);
    expect(after.completion_tokens - before.completion_tokens).toBe(completion.usage!.completion_tokens);
  });

  it('meters every request once, whatever x-request-id the caller repeats or forges', async () => {
    // Five requests with one id, then ids copied from another answer: each is answered and billed.
    const before = await quietMeteredUsage(redis, cluster.apiKey);
    const first = await client.chat.completions.create({ model: 'sim-mini', messages: question }).withResponse();
    const answeredId = first.response.headers.get('x-request-id')!;
    const ids = ['same-id-1234', 'same-id-1234', 'same-id-1234', 'same-id-1234', 'same-id-1234', answeredId, answeredId, first.data.id];
    const answers = [first.data];
    for (const id of ids) {
      const { data, response } = await client.chat.completions
        .create({ model: 'sim-mini', messages: question }, { headers: { 'x-request-id': id } })
        .withResponse();
      expect(response.headers.get('x-request-id')).toBe(id);
      answers.push(data);
    }
    const expectedPico = answers.reduce((sum, answer) => sum + usdToPico((answer as unknown as { gateway: { cost_usd: number } }).gateway.cost_usd), 0n);
    const after = await meteredAtLeast(redis, cluster.apiKey, before.requests + answers.length, {
      description: 'every request to be metered',
      timeoutMs: 15_000,
    });
    expect(after.requests - before.requests).toBe(answers.length);
    expect(after.cost_pico_usd - before.cost_pico_usd).toBe(expectedPico);
    expect(after.prompt_tokens - before.prompt_tokens).toBe(answers.reduce((sum, answer) => sum + answer.usage!.prompt_tokens, 0));
  });
});

describe('a stream', () => {
  it('streams the same text as the whole completion for the same seed', async () => {
    const whole = await client.chat.completions.create({ model: 'sim-mini', messages: question, seed: 11 });
    const stream = await client.chat.completions.create({
      model: 'sim-mini',
      messages: question,
      seed: 11,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    const ids = new Set<string>();
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let first = true;
    for await (const chunk of stream) {
      ids.add(chunk.id);
      if (first) {
        expect(chunk.choices[0]?.delta.role).toBe('assistant');
        first = false;
      }
      for (const choice of chunk.choices) {
        text += choice.delta.content ?? '';
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(ids.size).toBe(1);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(whole.usage!.completion_tokens);
  });
});

describe('the model list', () => {
  it('lists the simulated models', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining(['sim-mini', 'sim-standard', 'sim-pro']));
  });
});

describe('errors', () => {
  it('raises AuthenticationError for a bad key', async () => {
    const stranger = new OpenAI({ baseURL: cluster.baseUrl, apiKey: 'br-notakeythatexists00000000000000000000', maxRetries: 0 });
    await expect(stranger.chat.completions.create({ model: 'sim-mini', messages: question })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('raises BadRequestError naming the bad field', async () => {
    const error = await client.chat.completions.create({ model: 'sim-mini', messages: question, temperature: 5 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('temperature');
  });

  it('raises NotFoundError for an unknown model', async () => {
    const error = await client.chat.completions.create({ model: 'no-such-model', messages: question }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });
});

describe('auto and tools', () => {
  it('routes "auto" to a model and says which', async () => {
    const completion = await client.chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] });
    const gateway = (completion as unknown as { gateway: { routed_to: string } }).gateway;
    expect(['sim-mini', 'sim-standard', 'sim-pro']).toContain(gateway.routed_to);
    expect(completion.model).toBe(gateway.routed_to);
  });

  it('returns tool calls whose arguments are a JSON string', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-mini',
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
      ],
      tool_choice: 'required',
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_weather');
    expect(typeof JSON.parse(call.function.arguments).city).toBe('string');
  });
});

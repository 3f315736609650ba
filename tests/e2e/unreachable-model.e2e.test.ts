/**
 * A model whose upstream refuses connections, through the whole cluster: the very first request
 * is answered 503 `model_unavailable` with Retry-After (whole and streamed, the stream as an HTTP
 * 503 before any byte), never 502; and a request that allows fallbacks is answered by the
 * catalog's next model, saying what it tried. The breakers are set never to open here, so every
 * answer comes from the executor's own verdict after its retries, as a first request's does.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { refusedBaseUrl } from '@gateway/testing';
import { UNAVAILABLE_RETRY_AFTER_MS } from '../../services/executor/src/pool/run-with-fallbacks.js';
import { fakeModelEntry, SIM_MINI_ENTRY, startCluster, writeCatalog, type Cluster } from './cluster.js';

const KEY_VARIABLE = 'UNREACHABLE_UPSTREAM_API_KEY';
let cluster: Cluster;
let client: OpenAI;

function post(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${cluster.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const hello = [{ role: 'user' as const, content: 'Hello there' }];

beforeAll(async () => {
  const refused = await refusedBaseUrl();
  const catalog = writeCatalog('unreachable-model', [
    SIM_MINI_ENTRY,
    ...['refused-whole', 'refused-stream', 'refused-client-stream', 'refused-fallback'].map((id) => fakeModelEntry(refused, KEY_VARIABLE, id)),
  ]);
  cluster = await startCluster({
    // Pro leaves catalog fallbacks off unless a request asks, so the unreachable model answers itself.
    plan: 'pro',
    env: {
      CATALOG_PATH: catalog,
      [KEY_VARIABLE]: 'sk-test-unreachable-model',
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
      EXECUTOR_RETRY_BASE_DELAY_MS: '10',
      EXECUTOR_RETRY_MAX_DELAY_MS: '50',
      // Breakers that never open: what the caller sees is the executor's verdict after its retries.
      EXECUTOR_BREAKER_CONSECUTIVE_FAILURES: '1000',
      EXECUTOR_BREAKER_MINIMUM_CALLS: '1000',
      EXECUTOR_BREAKER_WINDOW: '1000',
    },
  });
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await cluster?.stop();
});

/** Expects the envelope and headers of a 503 `model_unavailable` with the executor's retry-after. */
async function expectModelUnavailable(response: Response): Promise<void> {
  expect(response.status).toBe(503);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.headers.get('retry-after')).toBe(String(Math.ceil(UNAVAILABLE_RETRY_AFTER_MS / 1000)));
  expect(response.headers.get('retry-after-ms')).toBe(String(UNAVAILABLE_RETRY_AFTER_MS));
  const body = (await response.json()) as { error: { type: string; code: string; message: string } };
  expect(body.error).toMatchObject({ type: 'service_unavailable_error', code: 'model_unavailable' });
}

describe('a model whose upstream refuses connections', () => {
  it('answers the first whole request 503 model_unavailable with Retry-After (official client)', async () => {
    const error = await client.chat.completions.create({ model: 'refused-whole', messages: hello }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    const failure = error as InstanceType<typeof OpenAI.InternalServerError>;
    expect(failure.status).toBe(503);
    expect(failure.code).toBe('model_unavailable');
    expect(failure.type).toBe('service_unavailable_error');
    expect(Number(failure.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(failure.headers?.get('retry-after-ms')).toBe(String(UNAVAILABLE_RETRY_AFTER_MS));
  });

  it('answers the first streamed request with an HTTP 503 before any byte, not an SSE stream', async () => {
    await expectModelUnavailable(await post({ model: 'refused-stream', messages: hello, stream: true }));
  });

  it("the official client's stream fails with the 503 before yielding anything", async () => {
    const error = await client.chat.completions.create({ model: 'refused-client-stream', messages: hello, stream: true }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('model_unavailable');
  });

  it('answers the same on every request, whole with raw fetch and "fallbacks": false', async () => {
    for (let i = 0; i < 3; i += 1) await expectModelUnavailable(await post({ model: 'refused-whole', messages: hello, fallbacks: false }));
  });
});

describe('fallbacks of a model whose upstream refuses connections', () => {
  type Answer = { model: string; gateway: { routed_to: string; tried: Array<{ model: string; reason: string }> } };

  it('with "fallbacks": true or a list, the catalog\'s next model answers 200 and the answer says what was tried', async () => {
    for (const fallbacks of [true, ['sim-mini']]) {
      const response = await post({ model: 'refused-fallback', messages: hello, fallbacks });
      expect(response.status).toBe(200);
      const body = (await response.json()) as Answer;
      expect(body.model).toBe('sim-mini');
      expect(body.gateway.routed_to).toBe('sim-mini');
      expect(body.gateway.tried).toEqual([{ model: 'refused-fallback', reason: 'model_unavailable' }]);
    }
  });

  it('streamed with "fallbacks": true, the next model streams to [DONE] (official client)', async () => {
    const stream = await client.chat.completions.create({
      model: 'refused-fallback',
      messages: hello,
      stream: true,
      fallbacks: true,
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    const models = new Set<string>();
    let text = '';
    for await (const chunk of stream) {
      models.add(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect([...models]).toEqual(['sim-mini']);
    expect(text.length).toBeGreaterThan(0);
  });
});

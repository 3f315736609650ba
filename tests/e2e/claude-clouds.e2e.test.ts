/**
 * One Claude model served by three providers: `claude-sonnet-clouds` is Anthropic's (a fake
 * Anthropic Messages upstream that checks the key), with deployments on Amazon Bedrock (the fake
 * Bedrock, SigV4 recomputed on its side with the access key the executor found in the AWS_*
 * variables) and on Vertex AI (`vertex-anthropic` at a fake Vertex AI that accepts only tokens its
 * fake metadata server issued to the executor through google-auth-library), each at its own
 * provider's price. Four clients ask without pause, through the official `openai` client (chat
 * completions and Responses) and `@anthropic-ai/sdk` (/v1/messages), whole and streamed. Anthropic is taken
 * down (new connections reset, then nothing listening): the answers keep coming, none from
 * Anthropic; then Bedrock too: every answer comes from Vertex AI. No request fails; each answer
 * names its provider in `gateway.provider` and costs its usage at that provider's prices, to the
 * pico-dollar, in the answer, in the key's latest requests and in /v1/usage (the sum over the three).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BilledUsage } from '@gateway/catalog';
import {
  eventually,
  replayJson,
  replaySse,
  startFakeBedrock,
  startFakeUpstream,
  type FakeBedrock,
  type FakeGoogleAuth,
  type FakeUpstream,
  type Responder,
  providerFixture,
} from '@gateway/testing';
import { bedrockClaude, CACHE_USAGE } from './bedrock-claude-upstream.js';
import { awsKeysEnv, metadataServerEnv, startFakeVertex } from './cloud-credentials.js';
import { writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';
import { USAGE } from './codex-cli-upstream.js';
import { downable, DRILL_ADMIN_TOKEN, expectBilledByProvider, providerPrices, startLoad, takeDown, type ServedAnswer } from './provider-failover-drill.js';

const MODEL = 'claude-sonnet-clouds';
const ANTHROPIC_KEY_VARIABLE = 'FAKE_ANTHROPIC_API_KEY';
const ANTHROPIC_KEY = 'sk-ant-fake-0123456789abcdef';
const AWS = { accessKeyId: 'AKIAGATEWAYCLOUDS01', secretAccessKey: 'fake-secret-access-key-for-the-claude-clouds-drill' };
const REGION = 'us-east-1';
/**
 * Claude Sonnet 4.5 per million tokens: Anthropic's price (input, cache read, five-minute cache
 * write, output), and Bedrock's for a regional (not global) endpoint, 10% above it. Vertex AI
 * publishes the same 10% for its regional endpoints; it is priced a cent above Bedrock here (not a
 * published price) so that an answer priced by the wrong cloud shows in its cost.
 */
const PRICES = providerPrices({
  anthropic: { input: '3.00', cached_input: '0.30', cache_write: '3.75', output: '15.00' },
  bedrock: { input: '3.30', cached_input: '0.33', cache_write: '4.125', output: '16.50' },
  'vertex-anthropic': { input: '3.31', cached_input: '0.331', cache_write: '4.1375', output: '16.51' },
});

/**
 * The billed usage each provider's answers carry: Anthropic's and Vertex AI's are the recorded
 * Messages fixtures (the whole one reads and writes the cache, the streamed one reads it), Bedrock's
 * the scripted Claude's, which reads and writes the cache when the request has a cache breakpoint
 * (the Messages turns mark their system prompt), so that Bedrock's cache prices are checked too.
 */
const WHOLE_MESSAGE_USAGE: BilledUsage = { prompt_tokens: 12 + 2048 + 100, completion_tokens: 15, cached_tokens: 2048, cache_write_tokens: 100 };
const STREAMED_MESSAGE_USAGE: BilledUsage = { prompt_tokens: 25 + 1024, completion_tokens: 8, cached_tokens: 1024, cache_write_tokens: 0 };
const BEDROCK_USAGE: BilledUsage = { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, cached_tokens: 0, cache_write_tokens: 0 };
const BEDROCK_CACHED_USAGE: BilledUsage = {
  prompt_tokens: USAGE.input + CACHE_USAGE.read + CACHE_USAGE.written,
  completion_tokens: USAGE.output,
  cached_tokens: CACHE_USAGE.read,
  cache_write_tokens: CACHE_USAGE.written,
};

let anthropicUpstream: FakeUpstream;
let bedrock: FakeBedrock;
let google: FakeGoogleAuth;
let vertex: FakeUpstream;
const gateway = new ClusterFixture();

/** Claude's answer in Anthropic's Messages wire (Anthropic's API and Vertex AI's rawPredict speak it alike). */
const claudeMessage: Responder = (request, response) =>
  (request.body.stream === true ? replaySse(providerFixture('anthropic', 'stream-text.sse')) : replayJson(200, providerFixture('anthropic', 'message.json')))(
    request,
    response,
  );

/** Anthropic's API: /v1/messages with the key in x-api-key and an anthropic-version. */
const anthropicApi = downable((request, response) => {
  if (request.path !== '/v1/messages' || request.headers['x-api-key'] !== ANTHROPIC_KEY || !request.headers['anthropic-version']) {
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }));
    return;
  }
  return claudeMessage(request, response);
});

/** Bedrock's side: the scripted Claude while up, counting the answers it is sending; resets once down. */
let bedrockDown = false;
let bedrockInFlight = 0;
let bedrockResets = 0;
const bedrockGeneric = bedrockClaude();

function catalogFile(): string {
  return writeCatalog('claude-clouds-e2e', [
    `  - id: ${MODEL}
    provider: anthropic
    owned_by: anthropic
    created: 1735689600
    upstream: { model: claude-sonnet-4-5-20250929, base_url: "${new URL(anthropicUpstream.baseUrl).origin}", api_key_env: ${ANTHROPIC_KEY_VARIABLE} }
    pricing: ${PRICES.yaml('anthropic')}
    deployments:
      - { provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0", region: ${REGION}, base_url: "${bedrock.baseUrl}", pricing: ${PRICES.yaml('bedrock')} }
      - { provider: vertex-anthropic, model: "claude-sonnet-4-5@20250929", project: acme-prod-ml, region: us-east5, base_url: "${new URL(vertex.baseUrl).origin}", api_key_env: VERTEX_CREDENTIALS, pricing: ${PRICES.yaml('vertex-anthropic')} }
    context_window: 200000
    max_output_tokens: 64000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: false }
    quality_tier: premium`,
  ]);
}

beforeAll(async () => {
  anthropicUpstream = await startFakeUpstream(anthropicApi.responder);
  bedrock = await startFakeBedrock({ region: REGION, credentials: [AWS] });
  bedrock.reply((request) => {
    if (bedrockDown) {
      bedrockResets += 1;
      return { kind: 'reset' };
    }
    bedrockInFlight += 1;
    void request.closed.then(() => {
      bedrockInFlight -= 1;
    });
    return bedrockGeneric(request);
  });
  // Vertex AI answers 100 ms later than the others, so that the pool, which balances by expected
  // wait, prefers Bedrock to it once Anthropic is down: the drill sees Bedrock take over first.
  ({ google, vertex } = await startFakeVertex(async (request, response) => {
    await sleep(100);
    await claudeMessage(request, response);
  }));
  await gateway.start({
    env: {
      CATALOG_PATH: catalogFile(),
      [ANTHROPIC_KEY_VARIABLE]: ANTHROPIC_KEY,
      EDGE_ADMIN_TOKEN: DRILL_ADMIN_TOKEN,
      ...awsKeysEnv(AWS, REGION, gateway.directory),
      ...metadataServerEnv(google, 'VERTEX_CREDENTIALS', gateway.directory),
      EXECUTOR_RETRY_BASE_DELAY_MS: '5',
      EXECUTOR_RETRY_MAX_DELAY_MS: '20',
    },
  });
}, 120_000);

afterAll(async () => {
  await gateway.stop(anthropicUpstream, bedrock, vertex, google);
});

type GatewayObject = { routed_to: string; provider?: string; cost_usd: number };
type Served = ServedAnswer & { api: string };
const question = 'What is the capital of France?';
/** The Messages turns' system prompt, marked as a cache breakpoint. */
const system: Anthropic.TextBlockParam[] = [{ type: 'text', text: 'You answer in one sentence.', cache_control: { type: 'ephemeral' } }];

/**
 * An OpenAI usage object's counts (input with the cache reads and writes in it, output, and the
 * input's details) as billed usage; the cache writes are the gateway's `cache_write_tokens` in the details.
 */
function billedUsage(input: number | undefined, output: number | undefined, inputDetails: unknown): BilledUsage {
  const details = inputDetails as { cached_tokens?: number; cache_write_tokens?: number } | undefined;
  return {
    prompt_tokens: input ?? 0,
    completion_tokens: output ?? 0,
    cached_tokens: details?.cached_tokens ?? 0,
    cache_write_tokens: details?.cache_write_tokens ?? 0,
  };
}

/** Chat completions' usage object as billed usage. */
function fromOpenAi(usage: OpenAI.CompletionUsage | null | undefined): BilledUsage {
  return billedUsage(usage?.prompt_tokens, usage?.completion_tokens, usage?.prompt_tokens_details);
}

/** Anthropic's usage object (input_tokens apart from cache reads and writes) as billed usage. */
function fromAnthropic(usage: Partial<Anthropic.Usage> | undefined): BilledUsage {
  const cached = usage?.cache_read_input_tokens ?? 0;
  const written = usage?.cache_creation_input_tokens ?? 0;
  return {
    prompt_tokens: (usage?.input_tokens ?? 0) + cached + written,
    completion_tokens: usage?.output_tokens ?? 0,
    cached_tokens: cached,
    cache_write_tokens: written,
  };
}

/** OpenAI's Responses usage object as billed usage. */
function fromResponses(usage: OpenAI.Responses.ResponseUsage | null | undefined): BilledUsage {
  return billedUsage(usage?.input_tokens, usage?.output_tokens, usage?.input_tokens_details);
}

/** The APIs the drill asks through, by turn: chat completions, Messages and Responses, each whole then streamed. */
const APIS = ['chat', 'chat-stream', 'messages', 'messages-stream', 'responses', 'responses-stream'] as const;

/** One answer of the model, through the API of the turn (APIS). */
async function ask(turn: number): Promise<Served> {
  const requestId = `claude-clouds-${randomUUID()}`;
  const startedAt = performance.now();
  const options = { headers: { 'x-request-id': requestId } };
  const served = (api: string, reported: GatewayObject | undefined, usage: BilledUsage): Served => {
    // The model asked for answered, whichever of its deployments served it.
    if (reported?.routed_to !== MODEL) throw new Error(`${api} answer ${requestId} routed to ${reported?.routed_to}, not ${MODEL}`);
    return { requestId, startedAt, api, provider: reported.provider ?? 'none', usage, costUsd: reported.cost_usd };
  };
  switch (APIS[turn % APIS.length]) {
    case 'chat': {
      const answer = await gateway.openai.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: question }] }, options);
      expect(answer.choices[0]?.message.content).toBeTruthy();
      return served('chat', (answer as unknown as { gateway: GatewayObject }).gateway, fromOpenAi(answer.usage));
    }
    case 'chat-stream': {
      let reported: GatewayObject | undefined;
      let usage: OpenAI.CompletionUsage | undefined;
      let text = '';
      const chunks = await gateway.openai.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: question }], stream: true, stream_options: { include_usage: true } },
        options,
      );
      for await (const chunk of chunks) {
        text += chunk.choices[0]?.delta.content ?? '';
        usage = chunk.usage ?? usage;
        reported = (chunk as unknown as { gateway?: GatewayObject }).gateway ?? reported;
      }
      expect(text).toBeTruthy();
      return served('chat-stream', reported, fromOpenAi(usage));
    }
    case 'messages': {
      const message = await gateway.anthropic.messages.create(
        { model: MODEL, max_tokens: 1024, system, messages: [{ role: 'user', content: question }] },
        options,
      );
      expect(message.content.some((block) => block.type === 'text' && block.text !== '')).toBe(true);
      return served('messages', (message as unknown as { gateway: GatewayObject }).gateway, fromAnthropic(message.usage));
    }
    case 'messages-stream': {
      const events = await gateway.anthropic.messages.create(
        { model: MODEL, max_tokens: 1024, system, messages: [{ role: 'user', content: question }], stream: true },
        options,
      );
      let reported: GatewayObject | undefined;
      let usage: Partial<Anthropic.Usage> | undefined;
      let text = '';
      for await (const event of events) {
        if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
        if (event.type === 'message_delta') {
          usage = event.usage as Partial<Anthropic.Usage>;
          reported = (event as unknown as { gateway?: GatewayObject }).gateway;
        }
      }
      expect(text).toBeTruthy();
      return served('messages-stream', reported, fromAnthropic(usage));
    }
    case 'responses': {
      const response = await gateway.openai.responses.create({ model: MODEL, input: question, store: false }, options);
      expect(response.output_text).toBeTruthy();
      return served('responses', (response as unknown as { gateway: GatewayObject }).gateway, fromResponses(response.usage));
    }
    default: {
      const events = await gateway.openai.responses.create({ model: MODEL, input: question, store: false, stream: true }, options);
      let completed: OpenAI.Responses.Response | undefined;
      let text = '';
      for await (const event of events) {
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }
      expect(text).toBeTruthy();
      return served('responses-stream', (completed as unknown as { gateway?: GatewayObject } | undefined)?.gateway, fromResponses(completed?.usage));
    }
  }
}

/** The usage an answer of `provider` on `api` carries, from the provider's fixtures and script. */
function expectedUsage(answer: Served): BilledUsage {
  if (answer.provider === 'bedrock') return answer.api.startsWith('messages') ? BEDROCK_CACHED_USAGE : BEDROCK_USAGE;
  return answer.api.endsWith('stream') ? STREAMED_MESSAGE_USAGE : WHOLE_MESSAGE_USAGE;
}

describe('one Claude model on Anthropic, Bedrock and Vertex AI', () => {
  it('keeps answering with no failed request as Anthropic, then Bedrock, are taken down under load, each answer priced by its provider', async () => {
    const load = startLoad(4, ask);
    const report = () =>
      [
        `--- failures\n${load.failures.map(String).join('\n')}`,
        `--- bedrock refusals\n${bedrock.refusals.join('\n')}`,
        `--- executor\n${gateway.cluster.logs.executor.join('').slice(-6_000)}`,
      ].join('\n');
    /** Who answered through which API so far, for a wait that timed out. */
    const tally = () =>
      JSON.stringify(
        Object.fromEntries(
          PRICES.providers.map((provider) => [
            provider,
            APIS.map((api) => load.answers.filter((answer) => answer.provider === provider && answer.api === api).length),
          ]),
        ),
      );
    /** Waits for `condition` while no request has failed: a failure ends the wait with the report. */
    const waitFor = (condition: () => boolean, description: string) =>
      eventually(
        () => {
          if (load.failures.length > 0) throw new Error(`a request failed:\n${report()}`);
          return condition();
        },
        description,
        90_000,
        50,
      ).catch((error: Error) => {
        throw new Error(`${error.message}; answers by provider and API (${APIS.join(', ')}): ${tally()}`);
      });
    /** Whether `provider` answered through every API (whole and streamed) since `since`. */
    const everyApi = (provider: string, since: number) =>
      APIS.every((api) => load.answers.some((answer) => answer.startedAt >= since && answer.provider === provider && answer.api === api));
    // While all three are up, the pool balances the model's deployments by expected wait: mostly
    // Anthropic and Bedrock, Vertex AI answering more slowly. Anthropic answers through every API.
    await waitFor(() => everyApi('anthropic', 0), 'Anthropic to answer through every API under load');

    const anthropicDownAt = await takeDown({ ...anthropicApi, close: () => anthropicUpstream.close() }, 'Anthropic');
    await waitFor(() => everyApi('bedrock', anthropicDownAt), 'Bedrock to answer through every API once Anthropic is down');
    const bedrockDownAt = await takeDown(
      { goDown: () => (bedrockDown = true), inFlight: () => bedrockInFlight, resets: () => bedrockResets, close: () => bedrock.close() },
      'Bedrock',
    );
    await waitFor(
      () => everyApi('vertex-anthropic', bedrockDownAt) && load.askedSince(bedrockDownAt) >= 40,
      'Vertex AI to answer 40 requests through every API once Bedrock is down',
    );
    await load.stop();

    expect(load.failures, report()).toEqual([]);
    expect(load.servedBy('anthropic', anthropicDownAt)).toBe(0);
    expect(load.servedBy('bedrock', bedrockDownAt)).toBe(0);
    expect(load.servedBy('vertex-anthropic', bedrockDownAt)).toBe(load.askedSince(bedrockDownAt));
    for (const answer of load.answers)
      expect({ id: answer.requestId, provider: answer.provider, usage: answer.usage }).toEqual({
        id: answer.requestId,
        provider: answer.provider,
        usage: expectedUsage(answer),
      });
    await expectBilledByProvider({ cluster: gateway.cluster, model: MODEL, load, pricing: PRICES.pricing });
  }, 360_000);
});

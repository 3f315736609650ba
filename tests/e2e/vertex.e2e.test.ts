/**
 * Google Vertex AI end to end: the cluster with a catalog whose Gemini model (`provider: vertex`,
 * in a region) and Claude model (`provider: vertex-anthropic`, the global location) point at a fake
 * Vertex AI in this process, driven by the official `openai` client and by `@anthropic-ai/sdk`
 * through /v1/messages. The fake accepts only access tokens that its fake Google token endpoints
 * issued to the executor through google-auth-library: the Gemini model's credentials are a
 * workload identity federation config (a subject token exchanged at the fake STS), the Claude
 * model's are Application Default Credentials answered by the fake metadata server that
 * GCE_METADATA_HOST names, as on GKE. What a user notices: the answers, whole and streamed, tool
 * calls, Anthropic's usage, and a clear error without the token once Vertex stops accepting it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { replayJson, replaySse, vertexGate, type FakeGoogleAuth, type FakeUpstream, type Responder, providerFixture } from '@gateway/testing';
import { streamedChat, type StreamedChat } from './chat-stream.js';
import { federationEnv, metadataServerEnv, startFakeVertex } from './cloud-credentials.js';
import { writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';

const GEMINI = 'vertex-gemini';
const CLAUDE = 'vertex-claude';

let auth: FakeGoogleAuth;
let upstream: FakeUpstream;
const gateway = new ClusterFixture();

function catalogFile(origin: string): string {
  const common = `    pricing: { input: "3.00", output: "15.00" }
    context_window: 200000
    max_output_tokens: 8192
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: premium`;
  return writeCatalog('vertex-e2e', [
    `  - id: ${GEMINI}
    provider: vertex
    owned_by: google
    created: 1735689600
    upstream: { model: gemini-2.5-flash, project: acme-prod-ml, region: europe-west4, base_url: "${origin}", api_key_env: VERTEX_FEDERATION_CREDENTIALS }
${common}`,
    `  - id: ${CLAUDE}
    provider: vertex-anthropic
    owned_by: anthropic
    created: 1735689600
    upstream: { model: claude-sonnet-4-5@20250929, project: acme-prod-ml, region: global, base_url: "${origin}", api_key_env: VERTEX_GKE_CREDENTIALS }
${common}`,
  ]);
}

/** Fixtures of the model's publisher, by the method Vertex was asked for; tools answered with calls when `tools` is set. */
function publishers(options: { tools?: boolean } = {}): Responder {
  return (request, response) => {
    const method = /:(\w+)(\?|$)/.exec(request.path)?.[1];
    const replay =
      method === 'generateContent'
        ? replayJson(200, providerFixture('gemini', options.tools ? 'generate-content-function-call.json' : 'generate-content.json'))
        : method === 'streamGenerateContent'
          ? replaySse(providerFixture('gemini', options.tools ? 'stream-function-call.sse' : 'stream-text.sse'))
          : method === 'rawPredict'
            ? replayJson(200, providerFixture('anthropic', options.tools ? 'message-tool-use.json' : 'message.json'))
            : replaySse(providerFixture('anthropic', options.tools ? 'stream-tool-use.sse' : 'stream-text.sse'));
    return replay(request, response);
  };
}

beforeAll(async () => {
  ({ google: auth, vertex: upstream } = await startFakeVertex(publishers()));
  await gateway.start({
    env: {
      CATALOG_PATH: catalogFile(new URL(upstream.baseUrl).origin),
      ...federationEnv(auth, 'VERTEX_FEDERATION_CREDENTIALS', gateway.directory),
      // The metadata server is the fake; gcloud's own credentials are looked for in an empty folder.
      ...metadataServerEnv(auth, 'VERTEX_GKE_CREDENTIALS', gateway.directory),
    },
  });
});

afterAll(async () => {
  await gateway.stop(upstream, auth);
});

/** A chat completion on `model` whole, then one streamed and read whole, of a Vertex answering in text; only their requests recorded. */
async function wholeAndStreamed(model: string): Promise<{ whole: OpenAI.ChatCompletion; streamed: StreamedChat }> {
  upstream.respond(vertexGate(auth, publishers()));
  upstream.requests.length = 0;
  const whole = await gateway.openai.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hello' }] });
  return { whole, streamed: await streamedChat(gateway.openai, model) };
}

describe('a Gemini model on Vertex AI through the openai client', () => {
  it('answers whole and streamed, on a token from workload identity federation, at the model in its region', async () => {
    const { whole, streamed } = await wholeAndStreamed(GEMINI);
    expect(whole.choices[0]?.message.content).toBe('Hello! How can I help you today?');
    expect(whole.usage).toMatchObject({ prompt_tokens: 2061, completion_tokens: 9 + 30 });
    expect(streamed).toMatchObject({ text: 'Hello! How can I help?', finish: 'stop', usage: { prompt_tokens: 1033, completion_tokens: 7 } });
    const paths = upstream.requests.map((request) => request.path);
    expect(paths).toContain('/v1/projects/acme-prod-ml/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent');
    expect(paths).toContain('/v1/projects/acme-prod-ml/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse');
    expect(upstream.requests.every((request) => /^Bearer ya29\.fake-sts-/.test(String(request.headers.authorization)))).toBe(true);
  });

  it('returns the tool calls Gemini makes, whole and streamed', async () => {
    upstream.respond(vertexGate(auth, publishers({ tools: true })));
    const tools: OpenAI.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } } },
      { type: 'function', function: { name: 'get_time', parameters: { type: 'object', properties: { timezone: { type: 'string' } } } } },
    ];
    const whole = await gateway.openai.chat.completions.create({ model: GEMINI, messages: [{ role: 'user', content: 'Weather and time in Boston?' }], tools });
    expect(whole.choices[0]?.finish_reason).toBe('tool_calls');
    const calls = whole.choices[0]?.message.tool_calls ?? [];
    expect(calls.map((call) => (call.type === 'function' ? [call.function.name, JSON.parse(call.function.arguments)] : []))).toEqual([
      ['get_weather', { location: 'Boston, MA', unit: 'celsius' }],
      ['get_time', { timezone: 'America/New_York' }],
    ]);
    const stream = await gateway.openai.chat.completions.create({
      model: GEMINI,
      messages: [{ role: 'user', content: 'Weather and time in Boston?' }],
      tools,
      stream: true,
    });
    const names: string[] = [];
    for await (const chunk of stream) for (const call of chunk.choices[0]?.delta?.tool_calls ?? []) if (call.function?.name) names.push(call.function.name);
    expect(names).toEqual(['get_weather', 'get_time']);
  });
});

describe('a Claude model on Vertex AI', () => {
  it('answers the openai client whole and streamed, on a metadata-server token, through rawPredict and streamRawPredict', async () => {
    const { whole, streamed } = await wholeAndStreamed(CLAUDE);
    expect(whole.choices[0]?.message.content).toBe('Hi! My name is Claude. How can I help you today?');
    expect(streamed.text).toBe('Hello! How can I help?');
    expect(streamed.finish).toBe('stop');
    const [first, second] = upstream.requests;
    expect(first?.path).toBe('/v1/projects/acme-prod-ml/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict');
    expect(second?.path).toBe('/v1/projects/acme-prod-ml/locations/global/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict');
    expect(first?.body).toMatchObject({ anthropic_version: 'vertex-2023-10-16' });
    expect(first?.body).not.toHaveProperty('model');
    expect(String(first?.headers.authorization)).toMatch(/^Bearer ya29\.fake-metadata-/);
    expect(auth.tokenRequests.filter((request) => request.via === 'metadata')).toEqual([{ via: 'metadata', granted: true }]);
  });

  it('answers @anthropic-ai/sdk through /v1/messages, whole and streamed, with cache breakpoints carried to Vertex', async () => {
    upstream.respond(vertexGate(auth, publishers()));
    const message = await gateway.anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 1024,
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(message.content.map((block) => (block.type === 'text' ? block.text : '')).join('')).toBe('Hi! My name is Claude. How can I help you today?');
    expect(message.usage).toMatchObject({ input_tokens: 12, output_tokens: 15, cache_read_input_tokens: 2048, cache_creation_input_tokens: 100 });
    expect(upstream.requests.at(-1)?.body).toMatchObject({
      anthropic_version: 'vertex-2023-10-16',
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
    });
    const stream = gateway.anthropic.messages.stream({ model: CLAUDE, max_tokens: 1024, messages: [{ role: 'user', content: 'Hello' }] });
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const final = await stream.finalMessage();
    expect(text).toBe('Hello! How can I help?');
    expect(final.stop_reason).toBe('end_turn');
  });

  it('answers tool use through @anthropic-ai/sdk', async () => {
    upstream.respond(vertexGate(auth, publishers({ tools: true })));
    const message = await gateway.anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 1024,
      tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { location: { type: 'string' } } } }],
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content.some((block) => block.type === 'tool_use' && block.name === 'get_weather')).toBe(true);
  });
});

describe('a token Vertex AI no longer accepts', () => {
  it('fails with a 502 in the API envelope that shows no token, without a 500', async () => {
    upstream.respond(vertexGate(auth, publishers()));
    auth.revokeAll();
    const failure = await gateway.openai.chat.completions
      .create({ model: GEMINI, messages: [{ role: 'user', content: 'Hello' }] })
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect(JSON.stringify((failure as InstanceType<typeof OpenAI.APIError>).error)).not.toMatch(/ya29|Bearer/);
  });
});

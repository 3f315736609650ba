/**
 * `model: "auto"` end to end: the five services as processes, driven by the official `openai`
 * client. The catalog has three real (openai-compatible) models of three tiers, served by a fake
 * upstream in this process, and a simulated model that "auto" must never pick while real ones are
 * on. The economy model lacks tools and has a small window, so that what a request needs visibly
 * moves the choice. A model becomes unavailable the way it does in production: its upstream fails,
 * the executor's breaker opens, the executor's health report says so on NATS, and the router stops
 * choosing it until the breaker lets a probe through again.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { eventually, type FakeUpstream, replayJson, replaySse, startFakeUpstream, fixture } from '@gateway/testing';
import { startCluster, type Cluster } from './cluster.js';

const KEY_VARIABLE = 'AUTO_ROUTER_E2E_API_KEY';
const BREAKER_OPEN_MS = 2_000;

function catalogFile(baseUrl: string): string {
  const real = (id: string, tier: string, extra: string) =>
    `  - { id: ${id}, provider: openai-compatible, owned_by: tests, created: 1735689600, upstream: { model: upstream-${id}, base_url: "${baseUrl}", api_key_env: ${KEY_VARIABLE} }, ${extra}, quality_tier: ${tier} }`;
  const path = join(mkdtempSync(join(tmpdir(), 'auto-router-e2e-')), 'catalog.yaml');
  writeFileSync(
    path,
    `${[
      'models:',
      '  - { id: sim-cheapest, provider: simulated, owned_by: gateway, created: 1735689600, upstream: { model: sim-cheapest }, pricing: { input: "0.01", output: "0.01" }, context_window: 200000, max_output_tokens: 16384, capabilities: { tools: true, vision: true, streaming: true, json_mode: true }, quality_tier: economy, simulation: { time_to_first_token_ms: 0, tokens_per_second: 0 } }',
      real(
        'auto-economy',
        'economy',
        'pricing: { input: "0.10", output: "0.40" }, context_window: 8192, max_output_tokens: 2048, capabilities: { tools: false, vision: false, streaming: true, json_mode: true }',
      ),
      real(
        'auto-standard',
        'standard',
        'pricing: { input: "0.50", output: "1.50" }, context_window: 65536, max_output_tokens: 8192, capabilities: { tools: true, vision: true, streaming: true, json_mode: true }',
      ),
      real(
        'auto-premium',
        'premium',
        'pricing: { input: "3.00", output: "12.00" }, context_window: 200000, max_output_tokens: 16384, capabilities: { tools: true, vision: true, streaming: true, json_mode: true }',
      ),
    ].join('\n')}\n`,
  );
  return path;
}

const HARD = `Prove by induction that the sum of the first n cubes equals (n(n+1)/2)^2, step by step. Then write a TypeScript function that checks the identity for every n up to 10^6 without overflow:

\`\`\`ts
function check(limit: number): boolean {
  for (let n = 1; n <= limit; n++) { /* ... */ }
  return true;
}
\`\`\`

Analyse its time complexity and explain whether BigInt is needed.`;

interface GatewayInfo {
  routed_to: string;
  auto?: { score: number; policy: string; tier: string | null; reason: string | null };
}

let upstream: FakeUpstream;
let cluster: Cluster;
let client: OpenAI;
/** While true, the fake upstream fails every call to the premium model. */
let premiumDown = false;

beforeAll(async () => {
  upstream = await startFakeUpstream((request, response) => {
    if (premiumDown && request.body.model === 'upstream-auto-premium') return replayJson(500, fixture('error-500.json'))(request, response);
    return request.body.stream ? replaySse(fixture('stream-text.sse'))(request, response) : replayJson(200, fixture('chat-completion.json'))(request, response);
  });
  cluster = await startCluster({
    env: {
      CATALOG_PATH: catalogFile(upstream.baseUrl),
      [KEY_VARIABLE]: 'sk-test-auto-router',
      // Our own subject: other clusters on the same NATS must not see these reports.
      DEPLOYMENT_HEALTH_SUBJECT: `health.v1.deployment.test-${randomBytes(4).toString('hex')}`,
      EXECUTOR_HEALTH_INTERVAL_MS: '200',
      EXECUTOR_BREAKER_CONSECUTIVE_FAILURES: '2',
      EXECUTOR_BREAKER_OPEN_MS: String(BREAKER_OPEN_MS),
      EXECUTOR_BREAKER_MAX_OPEN_MS: String(BREAKER_OPEN_MS),
      EXECUTOR_RETRY_BASE_DELAY_MS: '10',
    },
  });
  client = new OpenAI({ baseURL: cluster.baseUrl, apiKey: cluster.apiKey, maxRetries: 0 });
});

afterAll(async () => {
  await cluster?.stop();
  await upstream?.close();
});

async function auto(
  request: Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming> & { messages: OpenAI.Chat.ChatCompletionMessageParam[] },
): Promise<GatewayInfo> {
  const completion = await client.chat.completions.create({ model: 'auto', seed: 1, ...request });
  expect(completion.choices[0]?.message).toBeDefined();
  return (completion as unknown as { gateway: GatewayInfo }).gateway;
}

describe('model: "auto"', () => {
  it('answers, sends small talk to the economy model and a hard prompt to the premium one, and says so', async () => {
    const easy = await auto({ messages: [{ role: 'user', content: 'hi' }] });
    expect(easy.routed_to).toBe('auto-economy');
    expect(easy.auto?.policy).toBe('balanced');
    const hard = await auto({ messages: [{ role: 'user', content: HARD }] });
    expect(hard.routed_to).toBe('auto-premium');
    expect(hard.auto!.score).toBeGreaterThan(easy.auto!.score);

    const metrics = await (await fetch(`http://127.0.0.1:${cluster.ports.routerMetrics}/metrics`)).text();
    expect(metrics).toMatch(/gateway_router_decisions_total\{model="auto-premium",policy="balanced"[^}]*\} [1-9]/);
    expect(metrics).toMatch(/gateway_router_decisions_total\{model="auto-economy",policy="balanced"[^}]*\} [1-9]/);
  });

  it('routes on the request being asked, not on a long system prompt around it', async () => {
    const persona = 'You are the support assistant of a large retailer. Follow the policy below exactly. '.repeat(40);
    const greeting = await auto({
      messages: [
        { role: 'system', content: persona },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(greeting.routed_to).toBe('auto-economy');
    const hard = await auto({
      messages: [
        { role: 'system', content: persona },
        { role: 'user', content: HARD },
      ],
    });
    expect(hard.routed_to).toBe('auto-premium');
    // A short follow-up is read with the request before it.
    const followUp = await auto({
      messages: [
        { role: 'user', content: HARD },
        { role: 'assistant', content: 'Here is the proof...' },
        { role: 'user', content: 'why?' },
      ],
    });
    expect(followUp.routed_to).toBe('auto-premium');
  });

  it('streams too, and the gateway object on the last chunk names the choice', async () => {
    const stream = await client.chat.completions.create({ model: 'auto', stream: true, messages: [{ role: 'user', content: 'hello there' }] });
    let gateway: GatewayInfo | undefined;
    for await (const chunk of stream) gateway = (chunk as unknown as { gateway?: GatewayInfo }).gateway ?? gateway;
    expect(gateway?.routed_to).toBe('auto-economy');
    expect(gateway?.auto?.policy).toBe('balanced');
  });

  it('only picks a model with tools when the request has tools', async () => {
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      { type: 'function', function: { name: 'get_time', description: 'The current time', parameters: { type: 'object', properties: {} } } },
    ];
    const gateway = await auto({ messages: [{ role: 'user', content: 'hi' }], tools });
    expect(gateway.routed_to).toBe('auto-standard');
  });

  it('only picks a model whose window holds the prompt plus the completion budget', async () => {
    expect((await auto({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4_000 })).routed_to).toBe('auto-standard');
    // About 12,000 tokens of easy text: over the economy model's 8,192-token window.
    const long = 'The quick brown fox jumps over the lazy dog. '.repeat(1_200);
    expect((await auto({ messages: [{ role: 'user', content: `Repeat this back: ${long}` }] })).routed_to).not.toBe('auto-economy');
  });

  it('avoids a model whose upstream is down, and returns to it once it recovers', async () => {
    const hard = () => auto({ messages: [{ role: 'user', content: HARD }] }).catch(() => undefined);
    premiumDown = true;
    try {
      // Failed calls open the premium model's breaker; the executor reports it, the router skips it.
      const avoided = await eventually(
        async () => {
          const gateway = await hard();
          return gateway?.routed_to === 'auto-standard' ? gateway : undefined;
        },
        'auto to avoid the failing premium model',
        20_000,
        50,
      );
      expect(avoided.auto?.policy).toBe('balanced');
    } finally {
      premiumDown = false;
    }
    await eventually(async () => ((await hard())?.routed_to === 'auto-premium' ? true : undefined), 'the premium model to be chosen again', 20_000, 100);
  });

  it('follows the policy the caller asks for in the body or a header, and refuses an unknown one', async () => {
    const best = await auto({ messages: [{ role: 'user', content: 'hi' }], route_policy: 'best' } as never);
    expect(best.routed_to).toBe('auto-premium');
    expect(best.auto).toMatchObject({ policy: 'best', tier: 'premium' });
    expect(typeof best.auto?.reason).toBe('string');
    const cheapest = await client.chat.completions.create(
      { model: 'auto', messages: [{ role: 'user', content: HARD }] },
      { headers: { 'x-route-policy': 'cheapest' } },
    );
    expect((cheapest as unknown as { gateway: GatewayInfo }).gateway.routed_to).toBe('auto-economy');
    const refused = await client.chat.completions
      .create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }], route_policy: 'luckiest' } as never)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('route_policy');
  });

  it("applies the key's default policy when the request names none", async () => {
    const { execFileSync } = await import('node:child_process');
    const created = JSON.parse(
      execFileSync(process.execPath, ['services/auth/dist/cli/cli.js', 'create-key', '--plan', 'pro', '--routing-policy', 'best', '--json'], {
        cwd: new URL('../..', import.meta.url).pathname,
        env: { ...process.env, REDIS_URL: cluster.redisUrl },
        encoding: 'utf8',
      }),
    ) as { secret: string };
    const keyed = new OpenAI({ baseURL: cluster.baseUrl, apiKey: created.secret, maxRetries: 0 });
    const completion = await keyed.chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }] });
    expect((completion as unknown as { gateway: GatewayInfo }).gateway).toMatchObject({ routed_to: 'auto-premium', auto: { policy: 'best' } });
    const overridden = await keyed.chat.completions.create({ model: 'auto', messages: [{ role: 'user', content: 'hi' }], route_policy: 'cheapest' } as never);
    expect((overridden as unknown as { gateway: GatewayInfo }).gateway.routed_to).toBe('auto-economy');
  });

  it('never answers with the simulated model while real ones are on, however cheap it is', async () => {
    for (const content of ['hi', HARD]) expect((await auto({ messages: [{ role: 'user', content }] })).routed_to).not.toBe('sim-cheapest');
  });
});

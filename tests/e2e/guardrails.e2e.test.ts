/**
 * Guardrails at the edge, end to end: a cluster whose edge is pointed at a guard service (the fake
 * of services/edge/src/testing/fake-guard.ts, a real gRPC server that finds a test card number and
 * `sk_live_` secrets), the official OpenAI and Anthropic clients, a fake upstream that records what
 * reaches the provider, and an upstream MCP server. Policies are put through the admin API, each
 * attached to a key of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { eventually, fixture, type FakeUpstream, replayJson, replaySse, startFakeUpstream } from '@gateway/testing';
import { type FakeGuard, startFakeGuard } from '../../services/edge/src/testing/fake-guard.js';
import { fakeModelEntry, SIM_MINI_ENTRY, writeCatalog } from './cluster.js';
import { ClusterFixture } from './cluster-fixture.js';
import { adminApi, mcpClients } from './mcp-clients.js';
import { startMcpUpstream, type McpUpstream } from './mcp-upstreams.js';

const ADMIN_TOKEN = 'guardrails-e2e-admin-token-0123456789abcdef';
const KEY_VARIABLE = 'GUARDRAILS_UPSTREAM_API_KEY';
const CARD = '4111 1111 1111 1111';
const SECRET = 'sk_live_abcdefghijklmnop';
const PROMPT = `Please charge my card ${CARD} for the order.`;

const gateway = new ClusterFixture();
const admin = adminApi(() => gateway.origin, ADMIN_TOKEN);
const clients = mcpClients();
let guard: FakeGuard;
let upstream: FakeUpstream;
let tools: McpUpstream;

type Key = { id: string; secret: string };
const keys: Record<string, Key> = {};

interface GatewayGuardrail {
  policy: string;
  check: string;
  point: string;
  action: string;
  enforced: boolean;
  entity: string;
  error?: string;
}

/** A policy of one check attached to one key, as the admin API takes it. */
function policy(key: Key, check: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { attachment: { key_ids: [key.id] }, checks: [{ name: 'card', ...check }], ...extra };
}

function openai(key: Key): OpenAI {
  return new OpenAI({ baseURL: gateway.cluster.baseUrl, apiKey: key.secret, maxRetries: 0 });
}

function chat(key: Key, content = PROMPT) {
  return openai(key).chat.completions.create({ model: 'guarded-model', messages: [{ role: 'user', content }] });
}

/** What the provider received of every request since `from`, as text. */
function upstreamBodiesSince(from: number): string {
  return upstream.requests
    .slice(from)
    .map((request) => JSON.stringify(request.body))
    .join('\n');
}

function guardrailsOf(answer: unknown): GatewayGuardrail[] {
  return (answer as { gateway?: { guardrails?: GatewayGuardrail[] } }).gateway?.guardrails ?? [];
}

/** A chat answer of the fake upstream whose text is `content`. */
function answerSaying(content: string): string {
  return JSON.stringify({
    id: 'chatcmpl-guard',
    object: 'chat.completion',
    created: 1735689600,
    model: 'gpt-4o-mini',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 },
  });
}

beforeAll(async () => {
  [guard, upstream, tools] = await Promise.all([
    startFakeGuard(),
    startFakeUpstream(replayJson(200, fixture('chat-completion.json'))),
    startMcpUpstream({ name: 'tools', tools: { echo: (args) => String(args.text ?? '') } }),
  ]);
  const catalog = writeCatalog('guardrails', [SIM_MINI_ENTRY, fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, 'guarded-model', [])]);
  await gateway.start({
    mcp: true,
    env: {
      CATALOG_PATH: catalog,
      [KEY_VARIABLE]: 'sk-test-guardrails',
      EDGE_ADMIN_TOKEN: ADMIN_TOKEN,
      GUARD_SERVICE_ADDR: guard.address,
      EDGE_GUARD_DEADLINE_MARGIN_MS: '300',
      MCP_RELOAD_INTERVAL_MS: '200',
    },
  });
  for (const name of ['block', 'mask', 'monitor', 'allowOnError', 'blockOnError', 'output', 'restore', 'tools']) {
    const response = await admin('POST', '/admin/v1/keys', { plan: 'pro' });
    expect(response.status).toBe(201);
    keys[name] = (await response.json()) as Key;
  }
  const pii = { pii: { entities: ['card'] } };
  const policies: Record<string, unknown> = {
    'cards-block': policy(keys.block!, { points: ['input'], action: 'block', ...pii }),
    'cards-mask': policy(keys.mask!, { points: ['input'], action: 'mask', ...pii }),
    'cards-monitor': policy(keys.monitor!, { points: ['input'], action: 'block', ...pii }, { mode: 'monitor' }),
    'guard-down-allow': policy(keys.allowOnError!, { points: ['input'], action: 'block', ...pii }, { on_error: 'allow' }),
    'guard-down-block': policy(keys.blockOnError!, { points: ['input'], action: 'block', ...pii }, { on_error: 'block' }),
    'answers-block': policy(keys.output!, { points: ['output'], action: 'block', ...pii }),
    'cards-restore': policy(keys.restore!, { points: ['input'], action: 'mask', ...pii }, { restore_masked: true }),
    'tool-secrets': policy(keys.tools!, { name: 'secrets', points: ['tool_arguments'], action: 'block', secrets: {} }),
    'tool-cards': policy(keys.tools!, { points: ['tool_result'], action: 'mask', ...pii }),
  };
  for (const [name, body] of Object.entries(policies)) {
    const response = await admin('PUT', `/admin/v1/policies/${name}`, body);
    expect(response.status, await response.clone().text()).toBe(200);
  }
  expect((await admin('PUT', '/admin/v1/mcp-servers/tools', { url: tools.url })).status).toBe(200);
  // The edge has the policies once the block policy refuses.
  await eventually(async () => {
    const response = await fetch(`${gateway.cluster.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.block!.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'guarded-model', messages: [{ role: 'user', content: PROMPT }] }),
    });
    return response.status === 400;
  }, 'the policies to reach the edge');
}, 180_000);

afterAll(async () => {
  await clients.closeAll();
  await gateway.stop(upstream, guard, { close: () => tools?.stop() ?? Promise.resolve() });
});

describe('a request no policy applies to', () => {
  it('is served without any call to the guard', async () => {
    const before = guard.checks.length;
    const answer = await gateway.openai.chat.completions.create({ model: 'guarded-model', messages: [{ role: 'user', content: PROMPT }] });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    expect(guard.checks.length).toBe(before);
    expect(guardrailsOf(answer)).toEqual([]);
  });
});

describe('the input of a request', () => {
  it('blocked: the OpenAI client gets 400 content_policy_violation and the provider never sees the card', async () => {
    const from = upstream.requests.length;
    const error = await chat(keys.block!).then(
      () => expect.fail('the request was not blocked'),
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    const refusal = error as InstanceType<typeof OpenAI.BadRequestError>;
    expect(refusal.status).toBe(400);
    expect(refusal.code).toBe('content_policy_violation');
    expect(refusal.type).toBe('invalid_request_error');
    expect(refusal.message).toContain('blocked by policy cards-block check card');
    expect(upstreamBodiesSince(from)).toBe('');
  });

  it('blocked on the Messages API: Anthropic’s error envelope, as the Anthropic client reads it', async () => {
    const anthropic = new Anthropic({ baseURL: gateway.origin, apiKey: keys.block!.secret, maxRetries: 0 });
    const error = await anthropic.messages.create({ model: 'guarded-model', max_tokens: 100, messages: [{ role: 'user', content: PROMPT }] }).then(
      () => expect.fail('the request was not blocked'),
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    const body = (error as InstanceType<typeof Anthropic.BadRequestError>).error as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe('error');
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toContain('blocked by policy cards-block check card');
  });

  it('masked: the provider receives the placeholder, never the number', async () => {
    const from = upstream.requests.length;
    const answer = await chat(keys.mask!);
    const sent = upstreamBodiesSince(from);
    expect(sent).toContain('<CARD_1>');
    expect(sent).not.toContain('4111');
    expect(guardrailsOf(answer)).toEqual([{ policy: 'cards-mask', check: 'card', point: 'input', action: 'mask', enforced: true, entity: 'card' }]);
  });

  it('in monitor mode: passes unchanged, the decision shown as not enforced', async () => {
    const from = upstream.requests.length;
    const answer = await chat(keys.monitor!);
    expect(upstreamBodiesSince(from)).toContain(CARD);
    expect(guardrailsOf(answer)).toEqual([{ policy: 'cards-monitor', check: 'card', point: 'input', action: 'block', enforced: false, entity: 'card' }]);
  });

  it('with the guard down: on_error allow passes and records the error, on_error block refuses', async () => {
    guard.failure = 'unavailable';
    try {
      const answer = await chat(keys.allowOnError!);
      expect(guardrailsOf(answer)).toEqual([
        { policy: 'guard-down-allow', check: '', point: 'input', action: 'flag', enforced: true, entity: '', error: 'unavailable' },
      ]);
      await expect(chat(keys.blockOnError!)).rejects.toMatchObject({ status: 400, code: 'content_policy_violation' });
    } finally {
      guard.failure = 'none';
    }
  });

  it('with the guard past its deadline: the policy’s on_error applies', async () => {
    guard.failure = 'slow';
    try {
      const answer = await chat(keys.allowOnError!);
      expect(guardrailsOf(answer).map((decision) => decision.error)).toEqual(['deadline_exceeded']);
    } finally {
      guard.failure = 'none';
    }
  });
});

describe('the whole answer', () => {
  it('blocked: finish_reason content_filter and no content', async () => {
    upstream.respond(replayJson(200, answerSaying(`Sure, I saved ${CARD} for you.`)));
    try {
      const answer = await chat(keys.output!, 'What card did I give you?');
      expect(answer.choices[0]?.finish_reason).toBe('content_filter');
      expect(answer.choices[0]?.message.content ?? null).toBeNull();
      expect(JSON.stringify(answer)).not.toContain('4111');
      expect(guardrailsOf(answer)).toEqual([{ policy: 'answers-block', check: 'card', point: 'output', action: 'block', enforced: true, entity: 'card' }]);
    } finally {
      upstream.respond(replayJson(200, fixture('chat-completion.json')));
    }
  });

  it('restore_masked: the provider saw the placeholder, the caller gets the number back', async () => {
    upstream.respond(replayJson(200, answerSaying('Charged <CARD_1>.')));
    try {
      const from = upstream.requests.length;
      const answer = await chat(keys.restore!);
      expect(upstreamBodiesSince(from)).not.toContain('4111');
      expect(answer.choices[0]?.message.content).toBe(`Charged ${CARD}.`);
    } finally {
      upstream.respond(replayJson(200, fixture('chat-completion.json')));
    }
  });

  it('restore_masked on a stream: a placeholder split across chunks reaches the caller as the number', async () => {
    const pieces = ['Charged <CA', 'RD_', '1> today', '.'];
    const chunks = pieces.map((content, index) =>
      JSON.stringify({
        id: 'chatcmpl-guard',
        object: 'chat.completion.chunk',
        created: 1735689600,
        model: 'gpt-4o-mini',
        choices: [{ index: 0, delta: index === 0 ? { role: 'assistant', content } : { content }, finish_reason: null }],
      }),
    );
    const finish = JSON.stringify({
      id: 'chatcmpl-guard',
      object: 'chat.completion.chunk',
      created: 1735689600,
      model: 'gpt-4o-mini',
      choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
    });
    upstream.respond(replaySse(`${[...chunks, finish].map((chunk) => `data: ${chunk}`).join('\n\n')}\n\ndata: [DONE]\n\n`, { delayMs: 5 }));
    try {
      const from = upstream.requests.length;
      const stream = await openai(keys.restore!).chat.completions.create({
        model: 'guarded-model',
        messages: [{ role: 'user', content: PROMPT }],
        stream: true,
      });
      const deltas: string[] = [];
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta?.content ?? '');
      expect(upstreamBodiesSince(from)).not.toContain('4111');
      expect(deltas.join('')).toBe(`Charged ${CARD} today.`);
      expect(deltas.some((delta) => delta.includes('<'))).toBe(false);
    } finally {
      upstream.respond(replayJson(200, fixture('chat-completion.json')));
    }
  });
});

describe('MCP tool calls', () => {
  it('a secret in the arguments never reaches the upstream MCP server', async () => {
    const client = await clients.connect(gateway.origin, keys.tools!.secret);
    await expect(client.callTool({ name: 'tools__echo', arguments: { text: `deploy with ${SECRET}` } })).rejects.toThrow(
      /blocked by policy tool-secrets check secrets/,
    );
    expect(tools.calls.get('echo') ?? 0).toBe(0);
    const passed = await client.callTool({ name: 'tools__echo', arguments: { text: 'hello' } });
    expect((passed.content as Array<{ text: string }>)[0]?.text).toBe('hello');
    expect(tools.calls.get('echo')).toBe(1);
  });

  it("a card in the tool's result is masked before it reaches the caller", async () => {
    const client = await clients.connect(gateway.origin, keys.tools!.secret);
    const result = await client.callTool({ name: 'tools__echo', arguments: { text: `card ${CARD}` } });
    expect((result.content as Array<{ text: string }>)[0]?.text).toBe('card <CARD_1>');
  });
});

describe('the admin API of policies', () => {
  it('puts, lists, reads and deletes a policy, each change with its actor, never returning a credential', async () => {
    const credential = 'external-credential-value-123456';
    const body = {
      description: 'moderation',
      attachment: { team_ids: ['team_nobody'] },
      checks: [{ name: 'moderation', points: ['input', 'output'], action: 'flag', external: { service: 'openai_moderation', credential } }],
    };
    const put = await admin('PUT', '/admin/v1/policies/moderation', body);
    const putText = await put.text();
    expect(put.status, putText).toBe(200);
    expect(putText).not.toContain(credential);
    expect(JSON.parse(putText)).toMatchObject({
      object: 'policy',
      name: 'moderation',
      enabled: true,
      mode: 'enforce',
      on_error: 'allow',
      checks: [{ name: 'moderation', points: ['input', 'output'], action: 'flag', external: { service: 'openai_moderation' } }],
    });
    const list = await admin('GET', '/admin/v1/policies');
    const listText = await list.text();
    expect(listText).not.toContain(credential);
    expect((JSON.parse(listText) as { data: Array<{ name: string }> }).data.map((item) => item.name)).toContain('moderation');
    expect(((await (await admin('GET', '/admin/v1/policies/moderation')).json()) as { description: string }).description).toBe('moderation');
    expect(await (await admin('DELETE', '/admin/v1/policies/moderation')).json()).toEqual({ object: 'policy.deleted', name: 'moderation', deleted: true });
    expect((await admin('GET', '/admin/v1/policies/moderation')).status).toBe(404);
    const changes = guard.changes.filter((change) => change.name === 'moderation');
    expect(changes).toEqual([
      { method: 'PutPolicy', name: 'moderation', actor: 'admin static_token static-token' },
      { method: 'DeletePolicy', name: 'moderation', actor: 'admin static_token static-token' },
    ]);
  });

  it('refuses a check with no kind, naming what a check needs', async () => {
    const response = await admin('PUT', '/admin/v1/policies/broken', { checks: [{ name: 'x', points: ['input'], action: 'block' }] });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('exactly one of secrets, pii, patterns, limits, external');
  });
});

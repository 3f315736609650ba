/**
 * The real agent CLIs through guard policies, set up as a team would (cli-backend.ts, codex-exec.ts):
 * Claude Code (`claude -p`) on a Claude model (Anthropic Messages upstream) and Codex (`codex exec`
 * with a custom model provider, streamed Responses) on an openai-compatible model, each with a
 * gateway key under a policy put through the admin API. What a user notices: a prompt carrying an
 * API key under a blocking policy fails in the CLI with the gateway's "blocked by policy" message
 * and the provider never sees the key; a card number under a masking policy reaches the provider
 * as `<CARD_1>` and the CLI answers as usual; and a secret in a streamed answer under an output
 * mask never shows in what Codex prints, even split across the upstream's chunks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { replaySse, type Responder } from '@gateway/testing';
import { sendMessage } from './anthropic-thinking-upstream.js';
import { claudeCodeEnvironment, cliLines, runCli, startCliBackend, startEgressTrap, type CliBackend, type CliRun, type EgressTrap } from './cli-backend.js';
import { codexExec } from './codex-exec.js';
import { adminApi } from './mcp-clients.js';

const CLAUDE = fileURLToPath(new URL('../../node_modules/.bin/claude', import.meta.url));
const ADMIN_TOKEN = 'agent-cli-guardrails-admin-token-0123456789abcdef';
/** A project key as OpenAI issues them (sk-proj- and 32 more characters). */
const SECRET = 'sk-proj-Wq7nR2xT9bL4vK8mZ3pY6cJ1hF5dG0sA';
/** Parts of SECRET no text the provider or the user gets may hold. */
const SECRET_PIECES = ['Wq7nR2xT9b', 'Z3pY6cJ1', 'hF5dG0sA'];
const CARD = '4242 4242 4242 4242';

let backend: CliBackend;
let egress: EgressTrap;
const temporary: string[] = [];
const admin = adminApi(() => backend.cluster.baseUrl.replace(/\/v1$/, ''), ADMIN_TOKEN);
type Key = { id: string; secret: string };
const keys: Record<'block' | 'mask' | 'outputMask', Key> = {} as Record<'block' | 'mask' | 'outputMask', Key>;

/** Puts a policy through the admin API, attached to one key. */
async function putPolicy(name: string, key: Key, body: Record<string, unknown>): Promise<void> {
  const response = await admin('PUT', `/admin/v1/policies/${name}`, { attachment: { key_ids: [key.id] }, ...body });
  expect(response.status, await response.clone().text()).toBe(200);
}

/** Everything the fake upstream received from request `from` on, one JSON body a line. */
function sentUpstreamSince(from: number): string {
  return backend.upstream.requests
    .slice(from)
    .map((request) => JSON.stringify(request.body))
    .join('\n');
}

/** What the CLI printed, what the gateway, the fake upstream and the guard received: a failure's message. */
function report(name: string, run: CliRun): string {
  return backend.report(cliLines(name, run));
}

/** A Claude model that answers every Messages request with `text` (streamed when asked). */
function claudeAnswering(text: string): Responder {
  return (request, response) => {
    if (!request.path.endsWith('/v1/messages')) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    sendMessage(request, response, [{ type: 'text', text }]);
  };
}

/** A streamed chat answer (an openai-compatible upstream) whose content arrives as `pieces`, then a stop and the usage. */
function chatStreamOf(pieces: readonly string[]): Responder {
  const base = { id: 'chatcmpl-guardrails', object: 'chat.completion.chunk', created: 1735689600, model: 'gpt-4o-mini' };
  const events = [
    ...pieces.map((content, index) => ({
      ...base,
      choices: [{ index: 0, delta: index === 0 ? { role: 'assistant', content } : { content }, finish_reason: null }],
    })),
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
    { ...base, choices: [], usage: { prompt_tokens: 120, completion_tokens: 15, total_tokens: 135 } },
  ];
  return replaySse(`${events.map((event) => `data: ${JSON.stringify(event)}\n\n`).join('')}data: [DONE]\n\n`, { delayMs: 5 });
}

/** Runs `claude -p` on the Claude model with `key`, through the recording proxy, in a new temporary HOME and working directory. */
async function claudePrint(key: Key, prompt: string): Promise<CliRun> {
  const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
  const workdir = mkdtempSync(join(tmpdir(), 'claude-work-'));
  temporary.push(home, workdir);
  const env = claudeCodeEnvironment({
    home,
    baseUrl: backend.proxy.origin,
    apiKey: key.secret,
    keyVariable: 'ANTHROPIC_API_KEY',
    model: 'fake-claude',
    egress,
  });
  return runCli(CLAUDE, ['-p', prompt, '--dangerously-skip-permissions', '--output-format', 'text'], { cwd: workdir, env, timeoutMs: 100_000 });
}

/** Runs `codex exec` on the openai-compatible model with `key`, through the recording proxy. */
function codexRun(key: Key, prompt: string): Promise<CliRun> {
  return codexExec({ baseUrl: backend.proxy.baseUrl, apiKey: key.secret, temporary }, 'fake-model', prompt);
}

/** The statuses the gateway answered the CLI's generation requests (`path` and its query) with. */
function statusesOf(path: string): Array<number | undefined> {
  return backend.proxy.requests.filter((request) => request.method === 'POST' && request.path.split('?')[0] === path).map((request) => request.status);
}

beforeAll(async () => {
  egress = await startEgressTrap();
  backend = await startCliBackend('agent-cli-guardrails', { entries: () => [], env: { EDGE_ADMIN_TOKEN: ADMIN_TOKEN }, guard: true });
  for (const name of ['block', 'mask', 'outputMask'] as const) {
    const response = await admin('POST', '/admin/v1/keys', { plan: 'pro' });
    expect(response.status, await response.clone().text()).toBe(201);
    keys[name] = (await response.json()) as Key;
  }
  await putPolicy('cards-mask-input', keys.mask, { checks: [{ name: 'card', points: ['input'], action: 'mask', pii: { entities: ['card'] } }] });
  await putPolicy('secrets-mask-output', keys.outputMask, {
    stream_window: { tokens: 4, ms: 100 },
    checks: [{ name: 'secrets', points: ['output'], action: 'mask', secrets: {} }],
  });
  await putPolicy('secrets-block-input', keys.block, { checks: [{ name: 'secrets', points: ['input'], action: 'block', secrets: {} }] });
  // The edge has the policies once the last one put refuses (on the simulated model: no upstream call).
  await vi.waitFor(
    async () => {
      const response = await fetch(`${backend.cluster.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${keys.block.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-mini', messages: [{ role: 'user', content: 'probe sk-proj-probe0123456789abcdefghij' }] }),
      });
      expect(response.status).toBe(400);
    },
    { timeout: 30_000, interval: 100 },
  );
}, 180_000);

afterAll(async () => {
  await egress?.close();
  await backend?.close();
  for (const path of temporary) rmSync(path, { recursive: true, force: true });
});

describe('Claude Code under guard policies (Claude model, Anthropic Messages upstream)', () => {
  it('a prompt carrying an API key under a blocking policy fails with the policy named, and the provider never sees the key', async () => {
    backend.upstream.respond(claudeAnswering('This answer must not be reached.'));
    backend.proxy.requests.length = 0;
    const from = backend.upstream.requests.length;

    const run = await claudePrint(keys.block, `Check whether this key still works: ${SECRET}`);

    const printed = `${run.stdout}\n${run.stderr}`;
    expect(run.code, report('claude', run)).not.toBe(0);
    expect(printed, report('claude', run)).toContain('blocked by policy secrets-block-input');
    expect(printed, report('claude', run)).not.toContain('This answer must not be reached.');
    expect(statusesOf('/v1/messages'), report('claude', run)).toContain(400);
    const sent = sentUpstreamSince(from);
    for (const piece of [SECRET, ...SECRET_PIECES]) expect(sent, report('claude', run)).not.toContain(piece);
    expect(egress.attempts, report('claude', run)).toEqual([]);
  }, 120_000);

  it('a card number under a masking policy reaches the provider as <CARD_1>, and Claude Code answers', async () => {
    backend.upstream.respond(claudeAnswering('Noted, the card is on file: guardrails-claude-answer.'));
    backend.proxy.requests.length = 0;
    const from = backend.upstream.requests.length;

    const run = await claudePrint(keys.mask, `Remember my card ${CARD} for later and say noted.`);

    expect(run.code, report('claude', run)).toBe(0);
    expect(run.stdout, report('claude', run)).toContain('guardrails-claude-answer');
    const generations = statusesOf('/v1/messages');
    expect(generations.length, report('claude', run)).toBeGreaterThan(0);
    expect(generations, report('claude', run)).toEqual(generations.map(() => 200));
    const sent = sentUpstreamSince(from);
    expect(sent, report('claude', run)).toContain('<CARD_1>');
    expect(sent, report('claude', run)).not.toContain('4242');
  }, 120_000);
});

describe('Codex under guard policies (custom provider, streamed Responses, openai-compatible upstream)', () => {
  it('a prompt carrying an API key under a blocking policy fails with the policy named, and the provider never sees the key', async () => {
    backend.upstream.respond(chatStreamOf(['This answer must not be reached.']));
    backend.proxy.requests.length = 0;
    const from = backend.upstream.requests.length;

    const run = await codexRun(keys.block, `Check whether this key still works: ${SECRET}`);

    const printed = `${run.stdout}\n${run.stderr}`;
    expect(run.code, report('codex', run)).not.toBe(0);
    expect(printed, report('codex', run)).toContain('blocked by policy secrets-block-input');
    expect(printed, report('codex', run)).not.toContain('This answer must not be reached.');
    expect(statusesOf('/v1/responses'), report('codex', run)).toEqual([400]);
    const sent = sentUpstreamSince(from);
    for (const piece of [SECRET, ...SECRET_PIECES]) expect(sent, report('codex', run)).not.toContain(piece);
  }, 120_000);

  it('a card number under a masking policy reaches the provider as <CARD_1>, and Codex answers', async () => {
    backend.upstream.respond(chatStreamOf(['Noted, the card ', 'is on file: ', 'guardrails-codex-answer.']));
    backend.proxy.requests.length = 0;
    const from = backend.upstream.requests.length;

    const run = await codexRun(keys.mask, `Remember my card ${CARD} for later and say noted.`);

    expect(run.code, report('codex', run)).toBe(0);
    expect(run.stdout, report('codex', run)).toContain('guardrails-codex-answer');
    expect(statusesOf('/v1/responses'), report('codex', run)).toEqual([200]);
    const sent = sentUpstreamSince(from);
    expect(sent, report('codex', run)).toContain('<CARD_1>');
    expect(sent, report('codex', run)).not.toContain('4242');
  }, 120_000);

  it('a secret split across the chunks of a streamed answer under an output mask never shows in what Codex prints', async () => {
    backend.upstream.respond(chatStreamOf(['Your key is sk-pr', 'oj-Wq7nR2xT9bL4', 'vK8mZ3pY6cJ1hF5dG0sA and', ' that is all.']));
    backend.proxy.requests.length = 0;

    const run = await codexRun(keys.outputMask, 'What is my key?');

    expect(run.code, report('codex', run)).toBe(0);
    expect(statusesOf('/v1/responses'), report('codex', run)).toEqual([200]);
    expect(run.stdout, report('codex', run)).toMatch(/Your key is <[A-Z_]+_1> and that is all\./);
    const printed = `${run.stdout}\n${run.stderr}`;
    for (const piece of ['sk-pr', ...SECRET_PIECES]) expect(printed, report('codex', run)).not.toContain(piece);
  }, 120_000);
});

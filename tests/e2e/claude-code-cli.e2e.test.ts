/**
 * The real Claude Code CLI (`@anthropic-ai/claude-code`, a root devDependency) through the running
 * cluster, set up the way a team would: only the gateway's base URL, a gateway key and catalog
 * model ids in its environment, run non-interactively with `claude -p`. Behind the gateway a
 * scripted fake upstream plays the model: asked with Claude Code's tools, it calls its `Bash` tool
 * (name and argument shape read from the tools it received, through the gateway's translation);
 * asked again with the command's output, it answers with a marker; anything else Claude Code asks
 * on the side (a title, a topic) gets a short text. As a Claude model (Anthropic upstream) it
 * thinks first when Claude Code turns thinking on, signs the thinking block, and refuses as
 * Anthropic does a later request that does not bring that block back first. The same Claude model
 * served by Google Vertex AI (`vertex-anthropic`) is reached through a fake Vertex that accepts
 * only the tokens its fake GKE metadata server gave the executor. What a user notices: Claude Code ran the
 * command (the file is there), printed the answer, reached nothing but the gateway, and the gateway
 * metered its requests for the key.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGoogleAuth, vertexGate, type FakeGoogleAuth, type Responder } from '@gateway/testing';
import {
  claudeCodeEnvironment,
  cliLines,
  expectMetered,
  runCli,
  scriptShellTask,
  startCliBackend,
  startEgressTrap,
  type ClaudeKeyVariable,
  type CliBackend,
  type CliRun,
  type EgressTrap,
} from './cli-backend.js';
import { signatureOf } from './anthropic-thinking-upstream.js';
import { anthropicMessagesModel, chatCompletionsModel, type ScriptedTurn, type ScriptOptions } from './codex-cli-upstream.js';

const CLAUDE = fileURLToPath(new URL('../../node_modules/.bin/claude', import.meta.url));

let backend: CliBackend;
let egress: EgressTrap;
let google: FakeGoogleAuth;
const temporary: string[] = [];

/** A Claude model on Vertex AI (global location) at the fake upstream, its tokens from the fake GKE metadata server. */
function vertexClaudeEntry(upstreamBaseUrl: string): string {
  return `  - id: fake-vertex-claude
    provider: vertex-anthropic
    owned_by: tests
    created: 1735689600
    upstream: { model: claude-sonnet-4-5@20250929, project: acme-prod-ml, region: global, base_url: "${new URL(upstreamBaseUrl).origin}", api_key_env: VERTEX_CREDENTIALS }
    pricing: { input: "3.00", output: "15.00" }
    context_window: 200000
    max_output_tokens: 64000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: false }
    quality_tier: premium`;
}

/** The scripted Claude model behind Vertex AI: rawPredict / streamRawPredict, checked as Vertex does, then the Messages script. */
function vertexMessagesModel(options: ScriptOptions): Responder {
  const messages = anthropicMessagesModel(options);
  return vertexGate(google, (request, response) => messages({ ...request, path: '/v1/messages' }, response));
}

/**
 * Claude Code's environment (cli-backend.ts's claudeCodeEnvironment) with the recording proxy in
 * front of the gateway and a new temporary HOME. Claude Code logs that it does not know the
 * gateway's model ids (`[claude-code:unrecognized_model]` on stderr) and assumes a large context
 * window, which is harmless here.
 */
function claudeEnvironment(model: string, keyVariable: ClaudeKeyVariable): Record<string, string> {
  const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
  temporary.push(home);
  return claudeCodeEnvironment({ home, baseUrl: backend.proxy.origin, apiKey: backend.cluster.apiKey, keyVariable, model, egress });
}

/** Runs `claude -p` with the prompt in a new temporary working directory; resolves when it exits. */
async function claudePrint(model: string, keyVariable: ClaudeKeyVariable, prompt: string): Promise<CliRun & { workdir: string }> {
  const workdir = mkdtempSync(join(tmpdir(), 'claude-work-'));
  temporary.push(workdir);
  const run = await runCli(CLAUDE, ['-p', prompt, '--dangerously-skip-permissions', '--output-format', 'text'], {
    cwd: workdir,
    env: claudeEnvironment(model, keyVariable),
    timeoutMs: 100_000,
  });
  return { ...run, workdir };
}

/**
 * What Claude Code printed, the scripted turns, what the gateway and the fake upstream received,
 * and the logs: a failure's message.
 */
function report(run: CliRun, turns: readonly ScriptedTurn[]): string {
  return backend.report([...cliLines('claude', run), `--- scripted turns\n${JSON.stringify(turns)}`]);
}

/**
 * Runs Claude Code on `model` with the scripted model (speaking its provider's wire) behind the
 * gateway, and checks what a user would: Claude Code exits 0, the command it was asked to run
 * wrote the marker file in its working directory, the final answer is on its stdout, the model got
 * the command's output back, the key went in the header `keyVariable` names, and the gateway
 * metered each of Claude Code's requests with the upstream's usage. Resolves with the scripted turns.
 */
async function expectClaudeRunsTheBashTool(
  model: string,
  keyVariable: ClaudeKeyVariable,
  scriptedModel: (options: ScriptOptions) => Responder,
): Promise<ScriptedTurn[]> {
  const { fileMarker, answerMarker, turns, since, before, firstUpstreamRequest } = await scriptShellTask(backend, scriptedModel);
  egress.attempts.length = 0;

  const run = await claudePrint(model, keyVariable, 'Write the marker file with the Bash tool, then tell me you are done.');

  expect(run.code, report(run, turns)).toBe(0);
  const markerFile = join(run.workdir, 'marker.txt');
  expect(existsSync(markerFile), report(run, turns)).toBe(true);
  expect(readFileSync(markerFile, 'utf8').trim()).toBe(fileMarker);
  expect(run.stdout, report(run, turns)).toContain(answerMarker);
  // It reached nothing but the gateway.
  expect(egress.attempts, report(run, turns)).toEqual([]);
  // The main conversation: the Bash call, then the answer to a request carrying the command's
  // output. Side requests (no shell tool offered) are answered with a short text, in any number.
  const conversation = turns.filter((turn) => turn.kind !== 'other');
  expect(
    conversation.map((turn) => turn.kind),
    report(run, turns),
  ).toEqual(['tool-call', 'answer']);
  expect(conversation[0]!.tool).toBe('Bash');
  expect(conversation[1]!.toolOutput).toContain(fileMarker);
  // Every generation Claude Code asked for was a POST /v1/messages the gateway answered, with the
  // key where it was told to put it.
  const generations = backend.proxy.requests.filter((request) => request.method === 'POST' && /^\/v1\/messages(\?|$)/.test(request.path));
  expect(generations.length, report(run, turns)).toBe(turns.length);
  expect(
    generations.map((request) => request.status),
    report(run, turns),
  ).toEqual(generations.map(() => 200));
  // Claude Code streams, and so does the gateway's call of the upstream.
  expect(backend.upstream.requests.slice(firstUpstreamRequest).map((request) => request.body.stream)).toEqual(generations.map(() => true));
  for (const request of generations) {
    if (keyVariable === 'ANTHROPIC_AUTH_TOKEN') expect(request.headers.authorization).toBe(`Bearer ${backend.cluster.apiKey}`);
    else expect(request.headers['x-api-key']).toBe(backend.cluster.apiKey);
  }

  expect(generations.length).toBeGreaterThanOrEqual(2);
  await expectMetered(backend, { since, before, requests: generations.length });
  return turns;
}

beforeAll(async () => {
  google = await startFakeGoogleAuth();
  const gcloudConfig = mkdtempSync(join(tmpdir(), 'gcloud-config-'));
  temporary.push(gcloudConfig);
  backend = await startCliBackend('claude-code-cli', {
    entries: (upstreamBaseUrl) => [vertexClaudeEntry(upstreamBaseUrl)],
    // Application Default Credentials from the fake metadata server, never a real one.
    env: { VERTEX_CREDENTIALS: 'default', GCE_METADATA_HOST: google.metadataHost, GOOGLE_APPLICATION_CREDENTIALS: '', CLOUDSDK_CONFIG: gcloudConfig },
  });
  egress = await startEgressTrap();
});

afterAll(async () => {
  await egress?.close();
  await backend?.close();
  await google?.close();
  for (const path of temporary) rmSync(path, { recursive: true, force: true });
});

describe('Claude Code through the gateway', () => {
  it('runs the Bash command an openai-compatible model asks for and prints its answer, metered for the key (ANTHROPIC_AUTH_TOKEN)', async () => {
    await expectClaudeRunsTheBashTool('fake-model', 'ANTHROPIC_AUTH_TOKEN', chatCompletionsModel);
  }, 120_000);

  it('does the same with a Claude model behind the gateway (Anthropic Messages upstream), the key in ANTHROPIC_API_KEY', async () => {
    const turns = await expectClaudeRunsTheBashTool('fake-claude', 'ANTHROPIC_API_KEY', anthropicMessagesModel);
    // Claude Code turns thinking on; the model thought before its call, and Claude Code's second
    // request brought the signed thinking block back unchanged, first in the turn.
    const [call, answer] = turns.filter((turn) => turn.kind !== 'other');
    const thought = 'I will run the command with the Bash tool.';
    expect(call!.thinking, JSON.stringify(turns)).toMatchObject({ type: 'adaptive' });
    expect(answer!.thinking, JSON.stringify(turns)).toMatchObject({ type: 'adaptive' });
    expect(answer!.callTurnStart, JSON.stringify(turns)).toEqual({ type: 'thinking', thinking: thought, signature: signatureOf(thought) });
  }, 120_000);

  it('does the same with the Claude model served by Vertex AI, its signed thinking block carried back through streamRawPredict', async () => {
    const first = backend.upstream.requests.length;
    const turns = await expectClaudeRunsTheBashTool('fake-vertex-claude', 'ANTHROPIC_API_KEY', vertexMessagesModel);
    const [call, answer] = turns.filter((turn) => turn.kind !== 'other');
    const thought = 'I will run the command with the Bash tool.';
    expect(call!.thinking, JSON.stringify(turns)).toMatchObject({ type: 'adaptive' });
    expect(answer!.callTurnStart, JSON.stringify(turns)).toEqual({ type: 'thinking', thinking: thought, signature: signatureOf(thought) });
    const requests = backend.upstream.requests.slice(first);
    expect(requests.every((request) => request.path.endsWith('/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict'))).toBe(true);
    expect(requests.every((request) => request.body.anthropic_version === 'vertex-2023-10-16' && !('model' in request.body))).toBe(true);
    expect(google.tokenRequests).toEqual([{ via: 'metadata', granted: true }]);
  }, 120_000);
});

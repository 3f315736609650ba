/**
 * The real Codex CLI (`@openai/codex`, a root devDependency) through the running cluster, set up
 * the way a team would: a custom model provider in config.toml with only the gateway's base URL
 * and a gateway key, `wire_api = "responses"`, run non-interactively with `codex exec`. Behind the
 * gateway a scripted fake upstream plays the model: its first answer calls Codex's shell tool (the
 * tool's name and argument shape are read from the tools Codex sent, so the test follows Codex's
 * version), its second checks that the command's output came back and answers with a marker. What
 * a user notices: Codex ran the command (the file is there), printed the answer, and the gateway
 * metered the requests for the key.
 *
 * Codex's built-in OpenAI provider pointed at the gateway "the short way" (`openai_base_url` and
 * a gateway key as its API key, CODEX_API_KEY for `codex exec`) speaks the Responses API over a WebSocket: the same task runs
 * on one socket with no fallback to HTTP, with the model catalog the gateway serves
 * (`model_catalog_json` = GET /v1/models saved) so that Codex prints no fallback-metadata warning;
 * with `model_auto_compact_token_limit` set low, Codex's remote compaction runs through the
 * gateway (the served model writes the summary) and the task still completes, on an
 * openai-compatible model and on a Claude model.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Responder } from '@gateway/testing';
import { cliLines, expectMetered, runCli, scriptShellTask, startCliBackend, type CliBackend, type CliRun } from './cli-backend.js';
import { metric } from './cluster.js';
import { anthropicMessagesModel, chatCompletionsModel, type ScriptOptions } from './codex-cli-upstream.js';

const CODEX = fileURLToPath(new URL('../../node_modules/.bin/codex', import.meta.url));

let backend: CliBackend;
const temporary: string[] = [];

/**
 * A CODEX_HOME with a config.toml naming the gateway as the only model provider (`--strict-config`
 * makes Codex refuse a key it does not know). Codex reaches nothing else: the update check,
 * analytics, feedback and OpenTelemetry export are off, and so are the plugins and apps, whose
 * start-up sync otherwise tries github.com and chatgpt.com (it fails here, with warnings only).
 * Approvals are off and commands run in Codex's `workspace-write` sandbox (what `--full-auto`
 * uses), rooted at a temporary working directory; it works in this container (on a host without
 * the kernel features Codex's Linux sandbox needs, `danger-full-access` is the setting to use).
 * Codex warns that it has no metadata for the gateway's model ids and uses its defaults, which is
 * harmless. Retries are off so that a failed request shows as a failure.
 */
function codexHome(model: string, compactTokenLimit?: number): string {
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  temporary.push(home);
  writeFileSync(
    join(home, 'config.toml'),
    `model = "${model}"
model_provider = "gateway"
${compactTokenLimit === undefined ? '' : `model_auto_compact_token_limit = ${compactTokenLimit}`}
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.gateway]
name = "LLM gateway"
base_url = "${backend.proxy.baseUrl}"
env_key = "GATEWAY_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
remote_plugin = false
apps = false
`,
  );
  return home;
}

/** Runs `codex exec` with the prompt in a new temporary working directory; resolves when it exits. */
async function codexExec(model: string, prompt: string, compactTokenLimit?: number): Promise<CliRun & { workdir: string }> {
  const workdir = mkdtempSync(join(tmpdir(), 'codex-work-'));
  temporary.push(workdir);
  const home = codexHome(model, compactTokenLimit);
  const run = await runCli(CODEX, ['exec', '--strict-config', '--skip-git-repo-check', '--ephemeral', '--color', 'never', '-C', workdir, prompt], {
    cwd: workdir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      CODEX_HOME: home,
      GATEWAY_API_KEY: backend.cluster.apiKey,
      RUST_LOG: 'warn',
    },
    timeoutMs: 90_000,
  });
  return { ...run, workdir };
}

/**
 * A CODEX_HOME for Codex's built-in OpenAI provider pointed at the gateway: `openai_base_url`, the
 * gateway's model catalog saved as `model_catalog_json`, and (when given) a low
 * `model_auto_compact_token_limit`; the key is CODEX_API_KEY. The rest is codexHome's.
 */
async function builtInProviderHome(model: string, compactTokenLimit?: number): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  temporary.push(home);
  const catalog = await fetch(`${backend.cluster.baseUrl}/models`, { headers: { authorization: `Bearer ${backend.cluster.apiKey}` } });
  expect(catalog.status).toBe(200);
  writeFileSync(join(home, 'gateway-models.json'), await catalog.text());
  writeFileSync(
    join(home, 'config.toml'),
    `model = "${model}"
openai_base_url = "${backend.proxy.baseUrl}"
model_catalog_json = "${join(home, 'gateway-models.json')}"
${compactTokenLimit === undefined ? '' : `model_auto_compact_token_limit = ${compactTokenLimit}`}
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[features]
plugins = false
remote_plugin = false
apps = false
`,
  );
  return home;
}

/** Runs `codex exec` with Codex's built-in OpenAI provider (builtInProviderHome); resolves when it exits. */
async function codexExecBuiltIn(model: string, prompt: string, compactTokenLimit?: number): Promise<CliRun & { workdir: string }> {
  const workdir = mkdtempSync(join(tmpdir(), 'codex-work-'));
  temporary.push(workdir);
  const home = await builtInProviderHome(model, compactTokenLimit);
  const run = await runCli(CODEX, ['exec', '--strict-config', '--skip-git-repo-check', '--ephemeral', '--color', 'never', '-C', workdir, prompt], {
    cwd: workdir,
    // `codex exec` takes an API key from CODEX_API_KEY (interactive Codex: `codex login --with-api-key`).
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: home, CODEX_API_KEY: backend.cluster.apiKey, RUST_LOG: 'warn' },
    timeoutMs: 90_000,
  });
  return { ...run, workdir };
}

/**
 * Runs Codex's built-in provider on `model` over the gateway's WebSocket, with the scripted model
 * behind it, and checks what a user would: the task completes (exit 0, the marker file, the answer),
 * every request went over one upgraded socket (no POST /v1/responses: no fallback to HTTP), Codex
 * warned neither of a fallback nor of missing model metadata, and the gateway metered each model
 * call. With `compactTokenLimit`, Codex compacted through the gateway on the way: the scripted
 * model was asked for the summary, and answered the task from it.
 */
async function expectCodexOverWebSocket(model: string, scriptedModel: (options: ScriptOptions) => Responder, compactTokenLimit?: number): Promise<void> {
  const { fileMarker, answerMarker, turns, since, before } = await scriptShellTask(backend, scriptedModel);
  const creates = () => metric(edgeMetrics(), 'gateway_responses_websocket_messages_total', { type: 'response.create' });
  const createsBefore = await creates();

  const run = await codexExecBuiltIn(model, 'Write the marker file, then tell me you are done.', compactTokenLimit);

  expect(run.code, report(run)).toBe(0);
  expect(readFileSync(join(run.workdir, 'marker.txt'), 'utf8').trim(), report(run)).toBe(fileMarker);
  expect(run.stdout, report(run)).toContain(answerMarker);
  const upgrades = backend.proxy.requests.filter((request) => request.upgrade);
  expect(
    upgrades.map((request) => `${request.method} ${request.path} ${request.status}`),
    report(run),
  ).toEqual(['GET /v1/responses 101']);
  expect(
    backend.proxy.requests.filter((request) => request.method === 'POST' && request.path.startsWith('/v1/responses')),
    report(run),
  ).toEqual([]);
  // The edge took each of Codex's requests (its prewarm too) as a response.create on the socket.
  expect((await creates()) - createsBefore, report(run)).toBeGreaterThan(turns.length);
  expect(run.stderr, report(run)).not.toMatch(/falling back to HTTP|remote compact/i);
  // Codex knows the gateway's model (another model Codex picks for itself may still be unknown).
  expect(run.stderr, report(run)).not.toContain(`Model metadata for \`${model}\` not found`);
  expect(run.stderr, report(run)).not.toContain(`Unknown model ${model} is used`);
  const kinds = turns.map((turn) => turn.kind);
  if (compactTokenLimit === undefined) {
    expect(kinds, report(run)).toEqual(['tool-call', 'answer']);
  } else {
    expect(kinds, report(run)).toContain('compaction');
    expect(kinds.at(-1), report(run)).toBe('answer');
    expect(turns.find((turn) => turn.kind === 'compaction')?.toolOutput, report(run)).toContain(fileMarker);
  }
  await expectMetered(backend, { since, before, requests: turns.length });
}

/** The edge's /metrics. */
function edgeMetrics(): string {
  return `http://127.0.0.1:${backend.cluster.ports.edgeMetrics}/metrics`;
}

/** What Codex printed, what the gateway and the fake upstream received, and the logs: a failure's message. */
function report(run: CliRun): string {
  return backend.report(cliLines('codex', run));
}

/**
 * Runs Codex on `model` with the scripted model (speaking its provider's wire) behind the gateway,
 * and checks what a user would: Codex exits 0, the command it was asked to run wrote the marker
 * file in its working directory, the final answer is on its stdout, the model got the command's
 * output back, and the gateway metered each of Codex's requests with the upstream's usage.
 */
async function expectCodexRunsTheShellTool(model: string, scriptedModel: (options: ScriptOptions) => Responder): Promise<void> {
  const { fileMarker, answerMarker, turns, since, before, firstUpstreamRequest } = await scriptShellTask(backend, scriptedModel);

  const run = await codexExec(model, 'Write the marker file, then tell me you are done.');

  expect(run.code, report(run)).toBe(0);
  const markerFile = join(run.workdir, 'marker.txt');
  expect(existsSync(markerFile), report(run)).toBe(true);
  expect(readFileSync(markerFile, 'utf8').trim()).toBe(fileMarker);
  expect(run.stdout, report(run)).toContain(answerMarker);
  // The model's turns: the shell tool call, then the answer to a request carrying the command's output.
  expect(
    turns.map((turn) => turn.kind),
    report(run),
  ).toEqual(['tool-call', 'answer']);
  expect(turns[1]!.toolOutput).toContain(fileMarker);
  // Each turn was one streamed POST /v1/responses that the gateway answered.
  const responses = backend.proxy.requests.filter((request) => request.method === 'POST' && request.path.startsWith('/v1/responses'));
  expect(
    responses.map((request) => request.status),
    report(run),
  ).toEqual([200, 200]);
  // Codex streams, and so does the gateway's call of the upstream.
  expect(backend.upstream.requests.slice(firstUpstreamRequest).map((request) => request.body.stream)).toEqual([true, true]);

  await expectMetered(backend, { since, before, requests: 2 });
}

beforeAll(async () => {
  backend = await startCliBackend('codex-cli');
});

afterAll(async () => {
  await backend?.close();
  for (const path of temporary) rmSync(path, { recursive: true, force: true });
});

describe('the Codex CLI through the gateway', () => {
  it('runs the shell command an openai-compatible model asks for and prints its answer, metered for the key', async () => {
    await expectCodexRunsTheShellTool('fake-model', chatCompletionsModel);
  });

  it('does the same with a Claude model behind the gateway (Anthropic Messages upstream)', async () => {
    await expectCodexRunsTheShellTool('fake-claude', anthropicMessagesModel);
  });

  it("compacts with the custom provider too (Codex's own compaction, over HTTP), and completes the task", async () => {
    const { fileMarker, answerMarker, turns } = await scriptShellTask(backend, chatCompletionsModel);
    const run = await codexExec('fake-model', 'Write the marker file, then tell me you are done.', 100);
    expect(run.code, report(run)).toBe(0);
    expect(readFileSync(join(run.workdir, 'marker.txt'), 'utf8').trim(), report(run)).toBe(fileMarker);
    expect(run.stdout, report(run)).toContain(answerMarker);
    expect(
      turns.map((turn) => turn.kind),
      report(run),
    ).toContain('compaction');
    const posts = backend.proxy.requests.filter((request) => request.method === 'POST' && request.path.startsWith('/v1/responses'));
    expect(posts.length, report(run)).toBe(turns.length);
    expect(new Set(posts.map((request) => request.status)), report(run)).toEqual(new Set([200]));
  });

  it('runs the task over the Responses WebSocket with the built-in provider (openai_base_url), no HTTP fallback, no metadata warning', async () => {
    await expectCodexOverWebSocket('fake-model', chatCompletionsModel);
  });

  it('compacts the conversation through the gateway when model_auto_compact_token_limit is low, and completes the task', async () => {
    await expectCodexOverWebSocket('fake-model', chatCompletionsModel, 100);
  });

  it('compacts through the gateway with a Claude model too (Anthropic Messages upstream)', async () => {
    await expectCodexOverWebSocket('fake-claude', anthropicMessagesModel, 100);
  });
});

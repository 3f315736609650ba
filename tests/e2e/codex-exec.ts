/**
 * Runs the real Codex CLI (`@openai/codex`, a root devDependency) against a gateway, set up the way
 * a team would: a custom model provider in config.toml with only the gateway's base URL and a
 * gateway key, `wire_api = "responses"`, run non-interactively with `codex exec`; and the shell
 * task a scripted model gives it, with what a user would check afterwards.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Responder } from '@gateway/testing';
import { cliLines, expectMetered, runCli, scriptShellTask, type CliBackend, type CliRun, type ShellTask } from './cli-backend.js';
import type { ScriptOptions } from './codex-cli-upstream.js';

const CODEX = fileURLToPath(new URL('../../node_modules/.bin/codex', import.meta.url));

/** Where Codex runs: the base URL it calls (…/v1), a gateway key, and a list of folders to remove afterwards. */
export interface CodexTarget {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly temporary: string[];
  /** Where the gateway's model catalog is read for the built-in provider (…/v1), when not `baseUrl` (a recording proxy). */
  readonly gatewayUrl?: string;
}

/** How Codex is set up. */
export interface CodexOptions {
  /**
   * `custom` (the default): a model provider of its own with the gateway's base URL,
   * `wire_api = "responses"`, the key in GATEWAY_API_KEY. `built-in`: Codex's OpenAI provider
   * pointed at the gateway "the short way" (`openai_base_url`, which speaks the Responses API over a
   * WebSocket), the gateway's GET /v1/models saved as `model_catalog_json`, the key in CODEX_API_KEY.
   */
  readonly provider?: 'custom' | 'built-in';
  /** `model_auto_compact_token_limit`, when given. */
  readonly compactTokenLimit?: number;
  /** More of config.toml (an `[mcp_servers.<name>]` table), after the provider's. */
  readonly extraConfig?: string;
  readonly timeoutMs?: number;
}

/** The config.toml lines of the model provider: a custom one, or the built-in one's base URL and saved catalog. */
async function providerConfig(target: CodexTarget, home: string, provider: 'custom' | 'built-in'): Promise<{ top: string; table: string }> {
  if (provider === 'custom') {
    return {
      top: 'model_provider = "gateway"',
      table: `[model_providers.gateway]
name = "LLM gateway"
base_url = "${target.baseUrl}"
env_key = "GATEWAY_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`,
    };
  }
  const catalog = await fetch(`${target.gatewayUrl ?? target.baseUrl}/models`, { headers: { authorization: `Bearer ${target.apiKey}` } });
  expect(catalog.status).toBe(200);
  writeFileSync(join(home, 'gateway-models.json'), await catalog.text());
  return { top: `openai_base_url = "${target.baseUrl}"\nmodel_catalog_json = "${join(home, 'gateway-models.json')}"`, table: '' };
}

/**
 * A CODEX_HOME with a config.toml naming the gateway as the only model provider (`--strict-config`
 * makes Codex refuse a key it does not know). Codex reaches nothing else: the update check,
 * analytics, feedback and OpenTelemetry export are off, and so are the plugins and apps, whose
 * start-up sync otherwise tries github.com and chatgpt.com. Approvals are off and commands run in
 * Codex's `workspace-write` sandbox, rooted at a temporary working directory. Retries are off so
 * that a failed request shows as a failure.
 */
async function codexHome(target: CodexTarget, model: string, options: CodexOptions): Promise<string> {
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  target.temporary.push(home);
  const provider = await providerConfig(target, home, options.provider ?? 'custom');
  const lines = [
    `model = "${model}"`,
    provider.top,
    ...(options.compactTokenLimit === undefined ? [] : [`model_auto_compact_token_limit = ${options.compactTokenLimit}`]),
    'approval_policy = "never"',
    'sandbox_mode = "workspace-write"',
    'check_for_update_on_startup = false',
    '',
    provider.table,
    options.extraConfig ?? '',
    `[analytics]
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
  ];
  writeFileSync(join(home, 'config.toml'), lines.join('\n'));
  return home;
}

/** Runs `codex exec` on `model` with the prompt in a new temporary working directory; resolves when it exits. */
export async function codexExec(target: CodexTarget, model: string, prompt: string, options: CodexOptions = {}): Promise<CliRun & { workdir: string }> {
  const workdir = mkdtempSync(join(tmpdir(), 'codex-work-'));
  target.temporary.push(workdir);
  const home = await codexHome(target, model, options);
  // `codex exec` takes the built-in provider's key from CODEX_API_KEY (interactive Codex: `codex login --with-api-key`).
  const keyVariable = options.provider === 'built-in' ? 'CODEX_API_KEY' : 'GATEWAY_API_KEY';
  const run = await runCli(CODEX, ['exec', '--strict-config', '--skip-git-repo-check', '--ephemeral', '--color', 'never', '-C', workdir, prompt], {
    cwd: workdir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: home, [keyVariable]: target.apiKey, RUST_LOG: 'warn' },
    timeoutMs: options.timeoutMs ?? 90_000,
  });
  return { ...run, workdir };
}

/** How a test checks what the model's upstream was asked during the run, and more lines for a failure's message. */
export interface UpstreamCheck {
  /** Called once Codex has exited; `report` is the failure message. */
  check(task: ShellTask, report: string): void;
  /** Lines of what the upstream received, for a failure's message. */
  reportLines?(): string[];
}

/**
 * Runs Codex on `model` with the scripted model (`scriptedModel`, speaking its provider's wire)
 * behind the gateway, and checks what a user would: Codex exits 0, the command it was asked to run
 * wrote the marker file in its working directory, the final answer is on its stdout, the model got
 * the command's output back, each of its two turns was one POST /v1/responses the gateway answered
 * with 200, the upstream was asked as `upstream` checks, and the gateway metered both requests
 * with the upstream's usage.
 */
export async function expectCodexRunsTheShellTool(
  backend: CliBackend,
  temporary: string[],
  model: string,
  scriptedModel: (options: ScriptOptions) => Responder,
  upstream: UpstreamCheck,
): Promise<void> {
  const task = await scriptShellTask(backend, scriptedModel);
  const { fileMarker, answerMarker, turns, since, before } = task;

  const run = await codexExec(
    { baseUrl: backend.proxy.baseUrl, apiKey: backend.cluster.apiKey, temporary },
    model,
    'Write the marker file, then tell me you are done.',
  );
  const report = backend.report([...cliLines('codex', run), ...(upstream.reportLines?.() ?? [])]);

  expect(run.code, report).toBe(0);
  const markerFile = join(run.workdir, 'marker.txt');
  expect(existsSync(markerFile), report).toBe(true);
  expect(readFileSync(markerFile, 'utf8').trim()).toBe(fileMarker);
  expect(run.stdout, report).toContain(answerMarker);
  // The model's turns: the shell tool call, then the answer to a request carrying the command's output.
  expect(
    turns.map((turn) => turn.kind),
    report,
  ).toEqual(['tool-call', 'answer']);
  expect(turns[1]!.toolOutput).toContain(fileMarker);
  const responses = backend.proxy.requests.filter((request) => request.method === 'POST' && request.path.startsWith('/v1/responses'));
  expect(
    responses.map((request) => request.status),
    report,
  ).toEqual([200, 200]);
  upstream.check(task, report);

  await expectMetered(backend, { since, before, requests: 2 });
}

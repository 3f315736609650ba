/**
 * The real Codex CLI (`@openai/codex`, a root devDependency) through the running cluster, set up
 * the way a team would: a custom model provider in config.toml with only the gateway's base URL
 * and a gateway key, `wire_api = "responses"`, run non-interactively with `codex exec`. Behind the
 * gateway a scripted fake upstream plays the model: its first answer calls Codex's shell tool (the
 * tool's name and argument shape are read from the tools Codex sent, so the test follows Codex's
 * version), its second checks that the command's output came back and answers with a marker. What
 * a user notices: Codex ran the command (the file is there), printed the answer, and the gateway
 * metered the requests for the key.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startFakeUpstream, type FakeUpstream, type Responder } from '@gateway/testing';
import { fakeModelEntry, SIM_MINI_ENTRY, startCluster, writeCatalog, type Cluster } from './cluster.js';
import {
  anthropicMessagesModel,
  anthropicModelEntry,
  chatCompletionsModel,
  runCli,
  startRecordingProxy,
  USAGE,
  usageTotals,
  type CliRun,
  type RecordingProxy,
  type ScriptedTurn,
  type ScriptOptions,
} from './codex-cli-upstream.js';

const CODEX = fileURLToPath(new URL('../../node_modules/.bin/codex', import.meta.url));
const KEY_VARIABLE = 'FAKE_PROVIDER_API_KEY';

let upstream: FakeUpstream;
let cluster: Cluster;
let proxy: RecordingProxy;
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
function codexHome(model: string): string {
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  temporary.push(home);
  writeFileSync(
    join(home, 'config.toml'),
    `model = "${model}"
model_provider = "gateway"
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.gateway]
name = "LLM gateway"
base_url = "${proxy.baseUrl}"
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
async function codexExec(model: string, prompt: string): Promise<CliRun & { workdir: string }> {
  const workdir = mkdtempSync(join(tmpdir(), 'codex-work-'));
  temporary.push(workdir);
  const home = codexHome(model);
  const run = await runCli(CODEX, ['exec', '--strict-config', '--skip-git-repo-check', '--ephemeral', '--color', 'never', '-C', workdir, prompt], {
    cwd: workdir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home,
      CODEX_HOME: home,
      GATEWAY_API_KEY: cluster.apiKey,
      RUST_LOG: 'warn',
    },
    timeoutMs: 90_000,
  });
  return { ...run, workdir };
}

/** What the gateway's logs and the fake upstream received, for a failure's message. */
function report(run: CliRun): string {
  return [
    `codex exited ${run.code}`,
    `--- codex stdout\n${run.stdout}`,
    `--- codex stderr\n${run.stderr}`,
    `--- gateway requests\n${proxy.requests.map((request) => `${request.method} ${request.path} ${request.status ?? '-'}`).join('\n')}`,
    `--- upstream requests\n${upstream.requests.map((request) => `${request.method} ${request.path} ${JSON.stringify(request.body).slice(0, 2_000)}`).join('\n')}`,
    `--- edge\n${cluster.logs.edge.join('')}`,
    `--- executor\n${cluster.logs.executor.join('')}`,
  ].join('\n');
}

/**
 * Runs Codex on `model` with the scripted model (speaking its provider's wire) behind the gateway,
 * and checks what a user would: Codex exits 0, the command it was asked to run wrote the marker
 * file in its working directory, the final answer is on its stdout, the model got the command's
 * output back, and the gateway metered each of Codex's requests with the upstream's usage.
 */
async function expectCodexRunsTheShellTool(model: string, scriptedModel: (options: ScriptOptions) => Responder): Promise<void> {
  const since = Math.floor(Date.now() / 1000) - 3_600;
  const before = await usageTotals(cluster.baseUrl, cluster.apiKey, since);
  const fileMarker = `gateway-marker-${randomBytes(6).toString('hex')}`;
  const answerMarker = `gateway-answer-${randomBytes(6).toString('hex')}`;
  const turns: ScriptedTurn[] = [];
  proxy.requests.length = 0;
  const firstUpstreamRequest = upstream.requests.length;
  upstream.respond(
    scriptedModel({ command: `echo ${fileMarker} > marker.txt && cat marker.txt`, expectedOutput: fileMarker, answer: `Done: ${answerMarker}`, turns }),
  );

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
  const responses = proxy.requests.filter((request) => request.method === 'POST' && request.path.startsWith('/v1/responses'));
  expect(
    responses.map((request) => request.status),
    report(run),
  ).toEqual([200, 200]);
  // Codex streams, and so does the gateway's call of the upstream.
  expect(upstream.requests.slice(firstUpstreamRequest).map((request) => request.body.stream)).toEqual([true, true]);

  const after = await eventually(
    async () => {
      const totals = await usageTotals(cluster.baseUrl, cluster.apiKey, since);
      return totals.requests >= before.requests + 2 && totals;
    },
    "Codex's requests in the key's usage",
    10_000,
    100,
  );
  expect({
    requests: after.requests - before.requests,
    prompt_tokens: after.prompt_tokens - before.prompt_tokens,
    completion_tokens: after.completion_tokens - before.completion_tokens,
  }).toEqual({ requests: 2, prompt_tokens: 2 * USAGE.input, completion_tokens: 2 * USAGE.output });
}

beforeAll(async () => {
  upstream = await startFakeUpstream((_request, response) => {
    response.writeHead(500).end();
  });
  cluster = await startCluster({
    env: {
      CATALOG_PATH: writeCatalog('codex-cli', [
        SIM_MINI_ENTRY,
        fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, 'fake-model', []),
        anthropicModelEntry(upstream.baseUrl, KEY_VARIABLE),
      ]),
      [KEY_VARIABLE]: 'sk-fake-provider-codex-0123456789',
    },
  });
  proxy = await startRecordingProxy(cluster.baseUrl);
});

afterAll(async () => {
  await proxy?.close();
  await cluster?.stop();
  await upstream?.close();
  for (const path of temporary) rmSync(path, { recursive: true, force: true });
});

describe('the Codex CLI through the gateway', () => {
  it('runs the shell command an openai-compatible model asks for and prints its answer, metered for the key', async () => {
    await expectCodexRunsTheShellTool('fake-model', chatCompletionsModel);
  });

  it('does the same with a Claude model behind the gateway (Anthropic Messages upstream)', async () => {
    await expectCodexRunsTheShellTool('fake-claude', anthropicMessagesModel);
  });
});

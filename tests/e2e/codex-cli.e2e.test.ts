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
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Responder } from '@gateway/testing';
import { cliLines, expectMetered, scriptShellTask, startCliBackend, type CliBackend, type CliRun } from './cli-backend.js';
import { metric } from './cluster.js';
import { anthropicMessagesModel, chatCompletionsModel, type ScriptOptions } from './codex-cli-upstream.js';
import { type CodexTarget, codexExec, expectCodexRunsTheShellTool as expectShellTask } from './codex-exec.js';

let backend: CliBackend;
const temporary: string[] = [];

/** Where Codex runs: through the recording proxy in front of the gateway. */
function target(): CodexTarget {
  return { baseUrl: backend.proxy.baseUrl, apiKey: backend.cluster.apiKey, temporary, gatewayUrl: backend.cluster.baseUrl };
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

  const run = await codexExec(target(), model, 'Write the marker file, then tell me you are done.', { provider: 'built-in', compactTokenLimit });

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
 * Codex runs the shell tool (codex-exec.ts's checks), and streams: so does the gateway's call of
 * the upstream.
 */
async function expectCodexRunsTheShellTool(model: string, scriptedModel: (options: ScriptOptions) => Responder): Promise<void> {
  await expectShellTask(backend, temporary, model, scriptedModel, {
    check: (task, report) =>
      expect(
        backend.upstream.requests.slice(task.firstUpstreamRequest).map((request) => request.body.stream),
        report,
      ).toEqual([true, true]),
  });
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
    const run = await codexExec(target(), 'fake-model', 'Write the marker file, then tell me you are done.', { compactTokenLimit: 100 });
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

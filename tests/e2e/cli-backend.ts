/**
 * What an end-to-end test of a real coding CLI (Codex, Claude Code) runs against: a fake upstream
 * behind two catalog models (`fake-model`, openai-compatible, and `fake-claude`, Anthropic), the
 * cluster, and a recording proxy between the CLI and the gateway; a runner for the CLI with only
 * the environment it is given; a trap for anything it tries to reach beyond the gateway; and the
 * key's usage, to check that the CLI's requests were metered.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { expect } from 'vitest';
import { collectOutput, eventually, startFakeUpstream, type FakeUpstream, type Responder } from '@gateway/testing';
import { fakeModelEntry, SIM_MINI_ENTRY, startCluster, writeCatalog, type Cluster } from './cluster.js';
import { USAGE, type ScriptedTurn, type ScriptOptions } from './codex-cli-upstream.js';

const KEY_VARIABLE = 'FAKE_PROVIDER_API_KEY';

/** Listens on a free port of 127.0.0.1; resolves with the port. */
async function listenLocally(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as AddressInfo).port;
}

/** Closes a server and the connections it still holds. */
function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** A request the recording proxy passed on to the gateway, and the gateway's status. */
export interface ProxiedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  status?: number;
  /** A WebSocket upgrade (its status 101 once the gateway switched protocols). */
  upgrade?: boolean;
}

/** A started recording proxy. */
export interface RecordingProxy {
  /** `http://127.0.0.1:<port>/v1`, the base URL to give Codex. */
  readonly baseUrl: string;
  /** `http://127.0.0.1:<port>`, the base URL to give Claude Code (Anthropic's SDK adds `/v1`). */
  readonly origin: string;
  readonly requests: ProxiedRequest[];
  close(): Promise<void>;
}

/**
 * A pass-through HTTP proxy in front of the gateway that records each request's method, path,
 * headers and status, bodies streamed both ways untouched: what the CLI asked of the gateway, for
 * the test's assertions and a failure's report (the edge does not log requests). A WebSocket
 * upgrade is passed on too, then its frames both ways.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const targetUrl = new URL(target);
  const requests: ProxiedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    const record: ProxiedRequest = { method: incoming.method ?? '', path: incoming.url ?? '', headers: incoming.headers };
    requests.push(record);
    const forward = httpRequest(
      { host: targetUrl.hostname, port: targetUrl.port, method: incoming.method, path: incoming.url, headers: { ...incoming.headers, host: targetUrl.host } },
      (answer) => {
        record.status = answer.statusCode;
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forward.on('error', () => outgoing.destroy());
    incoming.pipe(forward);
  });
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (incoming: IncomingMessage, socket: Duplex, head: Buffer) => {
    const record: ProxiedRequest = { method: incoming.method ?? '', path: incoming.url ?? '', headers: incoming.headers, upgrade: true };
    requests.push(record);
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    socket.on('error', () => socket.destroy());
    const forward = httpRequest({
      host: targetUrl.hostname,
      port: targetUrl.port,
      method: incoming.method,
      path: incoming.url,
      headers: { ...incoming.headers, host: targetUrl.host },
    });
    const statusHead = (status: number | undefined, message: string | undefined, rawHeaders: string[]) => {
      let text = `HTTP/1.1 ${status ?? 502} ${message ?? ''}\r\n`;
      for (let index = 0; index < rawHeaders.length; index += 2) text += `${rawHeaders[index]}: ${rawHeaders[index + 1]}\r\n`;
      return `${text}\r\n`;
    };
    forward.on('upgrade', (answer, gatewaySocket, gatewayHead) => {
      record.status = answer.statusCode;
      upgraded.add(gatewaySocket);
      gatewaySocket.once('close', () => upgraded.delete(gatewaySocket));
      socket.write(statusHead(answer.statusCode, answer.statusMessage, answer.rawHeaders));
      if (gatewayHead.length > 0) socket.write(gatewayHead);
      if (head.length > 0) gatewaySocket.write(head);
      gatewaySocket.on('error', () => socket.destroy());
      socket.on('close', () => gatewaySocket.destroy());
      gatewaySocket.on('close', () => socket.destroy());
      gatewaySocket.pipe(socket).pipe(gatewaySocket);
    });
    forward.on('response', (answer) => {
      record.status = answer.statusCode;
      socket.write(statusHead(answer.statusCode, answer.statusMessage, answer.rawHeaders));
      answer.pipe(socket);
    });
    forward.on('error', () => socket.destroy());
    forward.end();
  });
  const port = await listenLocally(server);
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () => {
      for (const socket of upgraded) socket.destroy();
      return closeServer(server);
    },
  };
}

/**
 * A Claude model (`provider: anthropic`) served at the fake upstream's origin with the key in
 * keyVariable, as a catalog YAML entry.
 */
export function anthropicModelEntry(upstreamBaseUrl: string, keyVariable: string, id = 'fake-claude'): string {
  return `  - id: ${id}
    provider: anthropic
    owned_by: tests
    created: 1735689600
    upstream: { model: claude-sonnet-4-20250514, base_url: "${new URL(upstreamBaseUrl).origin}", api_key_env: ${keyVariable} }
    pricing: { input: "3.00", output: "15.00" }
    context_window: 200000
    max_output_tokens: 64000
    capabilities: { tools: true, vision: true, streaming: true, json_mode: true }
    quality_tier: premium`;
}

/** What one run of a CLI printed and how it ended. */
export interface CliRun {
  /** The exit code; null when it was killed or could not start. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** How to run a CLI: its working directory, its whole environment, and how long it may take. */
export interface CliOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/** Runs a CLI with nothing on stdin and only the given environment; resolves when it exits. */
export async function runCli(command: string, args: readonly string[], options: CliOptions): Promise<CliRun> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = collectOutput(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', resolve);
    // No binary (node_modules without the optional platform package): a failure with the reason.
    child.once('error', (error) => {
      output.stderr += String(error);
      resolve(null);
    });
  });
  clearTimeout(timer);
  return { code, ...output };
}

/** A key's usage totals, as GET /v1/usage reports them. */
export interface UsageTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/** The key's usage totals since `since` (Unix seconds), from the gateway at `baseUrl` (…/v1). */
export async function usageTotals(baseUrl: string, apiKey: string, since: number): Promise<UsageTotals> {
  const response = await fetch(`${baseUrl}/usage?start=${since}&bucket=hour`, { headers: { authorization: `Bearer ${apiKey}` } });
  if (response.status !== 200) throw new Error(`GET /v1/usage answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { totals: UsageTotals }).totals;
}

/** A started egress trap. */
export interface EgressTrap {
  /** `http://127.0.0.1:<port>`, for HTTPS_PROXY and HTTP_PROXY. */
  readonly url: string;
  /** Each host (`host:port` of a CONNECT, or a plain request's URL) a client tried to reach. */
  readonly attempts: string[];
  close(): Promise<void>;
}

/**
 * An HTTP proxy that refuses everything and records what was asked of it: given to a CLI as its
 * HTTPS_PROXY and HTTP_PROXY (with NO_PROXY for the gateway), it shows whether the CLI tried to
 * reach anything beyond the gateway.
 */
export async function startEgressTrap(): Promise<EgressTrap> {
  const attempts: string[] = [];
  const server = createServer((incoming, outgoing) => {
    attempts.push(incoming.url ?? '');
    outgoing.writeHead(502).end();
  });
  server.on('connect', (incoming, socket) => {
    attempts.push(incoming.url ?? '');
    socket.on('error', () => socket.destroy());
    socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
  });
  const port = await listenLocally(server);
  return {
    url: `http://127.0.0.1:${port}`,
    attempts,
    close: () => closeServer(server),
  };
}

/** How Claude Code is given the gateway key: `Authorization: Bearer` or `x-api-key`. */
export type ClaudeKeyVariable = 'ANTHROPIC_AUTH_TOKEN' | 'ANTHROPIC_API_KEY';

/** Where Claude Code runs: its HOME, the gateway (or a proxy in front of it), the key and the catalog model. */
export interface ClaudeCodeTarget {
  readonly home: string;
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly keyVariable: ClaudeKeyVariable;
  readonly model: string;
  readonly egress: EgressTrap;
}

/**
 * Claude Code's whole environment: `baseUrl` as its Anthropic API, the key in `keyVariable`, every
 * model it picks (main, background, and the per-family defaults) set to the catalog model, and
 * `home` as HOME and config directory. Nothing else is reached: telemetry, error reporting, the
 * auto-updater and the other non-essential traffic are off (without these, version 2.1.331 calls
 * api.anthropic.com), and any other host would go through the egress trap given as its proxy,
 * which records it. `IS_SANDBOX=1` lets `--dangerously-skip-permissions` run as root (this
 * container), which Claude Code otherwise refuses.
 */
export function claudeCodeEnvironment(target: ClaudeCodeTarget): Record<string, string> {
  const { model, egress } = target;
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: target.home,
    CLAUDE_CONFIG_DIR: join(target.home, '.claude'),
    ANTHROPIC_BASE_URL: target.baseUrl,
    [target.keyVariable]: target.apiKey,
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    ANTHROPIC_DEFAULT_OPUS_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    CLAUDE_CODE_SUBAGENT_MODEL: model,
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    IS_SANDBOX: '1',
    HTTPS_PROXY: egress.url,
    HTTP_PROXY: egress.url,
    NO_PROXY: '127.0.0.1',
  };
}

/** The cluster a CLI runs against, with the fake upstream behind it and the proxy in front. */
export interface CliBackend {
  readonly upstream: FakeUpstream;
  readonly cluster: Cluster;
  readonly proxy: RecordingProxy;
  /** `lines`, then what the gateway and the fake upstream received and the services' logs: a failure's message. */
  report(lines: readonly string[]): string;
  close(): Promise<void>;
}

/** More models of a CLI backend: catalog entries served by its fake upstream, and the variables they read. */
export interface CliBackendExtras {
  /** Catalog YAML entries, given the fake upstream's base URL. */
  entries(upstreamBaseUrl: string): string[];
  env: Record<string, string>;
  /** Also start the MCP service (startCluster's `mcp`). */
  mcp?: boolean;
  /** Also start the guard service (startCluster's `guard`); its log joins the failure's message. */
  guard?: boolean;
}

/**
 * Starts the fake upstream (answering 500 until a test scripts it), a cluster whose catalog has
 * `fake-model` (openai-compatible) and `fake-claude` (Anthropic) served by it, and any `extras`,
 * and the recording proxy. `name` names the catalog file.
 */
export async function startCliBackend(name: string, extras?: CliBackendExtras): Promise<CliBackend> {
  const upstream = await startFakeUpstream((_request, response) => {
    response.writeHead(500).end();
  });
  const cluster = await startCluster({
    mcp: extras?.mcp,
    guard: extras?.guard,
    env: {
      CATALOG_PATH: writeCatalog(name, [
        SIM_MINI_ENTRY,
        fakeModelEntry(upstream.baseUrl, KEY_VARIABLE, 'fake-model', []),
        anthropicModelEntry(upstream.baseUrl, KEY_VARIABLE),
        ...(extras?.entries(upstream.baseUrl) ?? []),
      ]),
      [KEY_VARIABLE]: `sk-fake-provider-${name}-0123456789`,
      ...extras?.env,
    },
  });
  const proxy = await startRecordingProxy(cluster.baseUrl);
  return {
    upstream,
    cluster,
    proxy,
    report: (lines) =>
      [
        ...lines,
        `--- gateway requests\n${proxy.requests.map((request) => `${request.method} ${request.path} ${request.status ?? '-'}`).join('\n')}`,
        `--- upstream requests\n${upstream.requests.map((request) => `${request.method} ${request.path} ${JSON.stringify(request.body).slice(0, 2_000)}`).join('\n')}`,
        `--- edge\n${cluster.logs.edge.join('')}`,
        `--- executor\n${cluster.logs.executor.join('')}`,
        ...(extras?.guard ? [`--- guard\n${cluster.logs.guard.join('')}`] : []),
      ].join('\n'),
    close: async () => {
      await proxy.close();
      await cluster.stop();
      await upstream.close();
    },
  };
}

/** The lines of a failure's message that show what a CLI printed and how it ended. */
export function cliLines(name: string, run: CliRun): string[] {
  return [`${name} exited ${run.code}`, `--- ${name} stdout\n${run.stdout}`, `--- ${name} stderr\n${run.stderr}`];
}

/**
 * Waits until the key's usage since `since` counts `requests` more than `before`, then checks
 * that exactly those were added, each with the scripted model's usage (USAGE).
 */
export async function expectMetered(backend: CliBackend, expected: { since: number; before: UsageTotals; requests: number }): Promise<void> {
  const { cluster } = backend;
  const after = await eventually(
    async () => {
      const totals = await usageTotals(cluster.baseUrl, cluster.apiKey, expected.since);
      return totals.requests >= expected.before.requests + expected.requests && totals;
    },
    "the CLI's requests in the key's usage",
    10_000,
    100,
  );
  expect({
    requests: after.requests - expected.before.requests,
    prompt_tokens: after.prompt_tokens - expected.before.prompt_tokens,
    completion_tokens: after.completion_tokens - expected.before.completion_tokens,
  }).toEqual({ requests: expected.requests, prompt_tokens: expected.requests * USAGE.input, completion_tokens: expected.requests * USAGE.output });
}

/** The shell task a test gives a CLI, scripted in the fake upstream, and where its checks start. */
export interface ShellTask {
  /** What the command writes to marker.txt. */
  fileMarker: string;
  /** What the final answer contains. */
  answerMarker: string;
  /** The scripted model's turns, appended as it answers. */
  turns: ScriptedTurn[];
  /** The usage window's start (Unix seconds) and the key's totals before the run. */
  since: number;
  before: UsageTotals;
  /** The index of the run's first request in the fake upstream's record. */
  firstUpstreamRequest: number;
}

/**
 * Scripts the fake upstream with `scriptedModel` for a new shell task (write a marker file, then
 * answer with another marker once the command's output comes back) and clears the proxy's record.
 */
export async function scriptShellTask(backend: CliBackend, scriptedModel: (options: ScriptOptions) => Responder): Promise<ShellTask> {
  const since = Math.floor(Date.now() / 1000) - 3_600;
  const before = await usageTotals(backend.cluster.baseUrl, backend.cluster.apiKey, since);
  const fileMarker = `gateway-marker-${randomBytes(6).toString('hex')}`;
  const answerMarker = `gateway-answer-${randomBytes(6).toString('hex')}`;
  const turns: ScriptedTurn[] = [];
  backend.proxy.requests.length = 0;
  const firstUpstreamRequest = backend.upstream.requests.length;
  backend.upstream.respond(
    scriptedModel({ command: `echo ${fileMarker} > marker.txt && cat marker.txt`, expectedOutput: fileMarker, answer: `Done: ${answerMarker}`, turns }),
  );
  return { fileMarker, answerMarker, turns, since, before, firstUpstreamRequest };
}

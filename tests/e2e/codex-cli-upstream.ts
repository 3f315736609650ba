/**
 * A scripted model behind the gateway for the Codex CLI and Claude Code tests, speaking OpenAI's chat completions
 * (what the executor sends an openai-compatible upstream): asked with Codex's tools, it calls
 * Codex's shell tool with a command; asked again with that call's output as a tool message, it
 * answers with text. The shell tool's name and argument shape are taken from the tools of the
 * request (Codex has offered `shell` with an argv array, `shell_command` with a string and
 * `exec_command` with `cmd` across versions; Claude Code offers `Bash` with a `command` string), so
 * the script follows the installed CLI. The same script speaks Anthropic's Messages API (streamed
 * events or whole) for a Claude model. Also a recording proxy for what a CLI asks of the gateway.
 */
import { spawn } from 'node:child_process';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReceivedRequest, Responder } from '@gateway/testing';

/** Codex's shell tools, most recent first, then Claude Code's. */
const SHELL_TOOLS = ['exec_command', 'shell_command', 'shell', 'Bash'];
const CALL_ID = 'call_codex_shell_1';
/** The usage each answer reports, for the metering assertions. */
export const USAGE = { input: 120, output: 15 };

/** One request the scripted model answered, and how. */
export interface ScriptedTurn {
  kind: 'tool-call' | 'answer' | 'other';
  /** The tool output the answer turn received. */
  toolOutput?: string;
  /** The shell tool the call named. */
  tool?: string;
}

/** What the scripted model does. */
export interface ScriptOptions {
  /** The shell command of the tool call. */
  command: string;
  /** What the command's output must contain for the answer turn to answer `answer`. */
  expectedOutput: string;
  /** The final text. */
  answer: string;
  /** Every turn is appended here. */
  turns: ScriptedTurn[];
}

/** A tool offered in a request: its name and its parameters' properties. */
interface OfferedTool {
  name: string;
  properties: Record<string, { type?: string }>;
}

/** What the scripted model answers: text, or a call of a tool with JSON arguments. */
interface ScriptedAnswer {
  text?: string;
  call?: { name: string; arguments: string };
}

/** A provider's wire: what the script reads from a request and how an answer is written. */
interface ModelWire {
  /** The path of the provider's generation endpoint. */
  path: string;
  tools(body: Record<string, unknown>): OfferedTool[];
  /** The text of the output of the script's tool call, when the request carries it. */
  toolOutput(body: Record<string, unknown>): string | undefined;
  send(request: ReceivedRequest, response: ServerResponse, answer: ScriptedAnswer): void;
}

/** The text of a message's content: a string, or parts with text. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === 'object' && part && 'text' in part ? String(part.text) : '')).join('');
  return '';
}

/** The CLI's shell tool among the offered tools, and the arguments that run `command` with it. */
export function shellCall(tools: readonly OfferedTool[], command: string): { name: string; arguments: Record<string, unknown> } | undefined {
  for (const name of SHELL_TOOLS) {
    const tool = tools.find((candidate) => candidate.name === name);
    if (!tool) continue;
    if ('cmd' in tool.properties) return { name, arguments: { cmd: command } };
    if (tool.properties.command?.type === 'array') return { name, arguments: { command: ['bash', '-lc', command] } };
    return { name, arguments: { command } };
  }
  return undefined;
}

/** Writes server-sent events, each a `data:` line (with its `event:` line when named). */
function writeEvents(response: ServerResponse, events: ReadonlyArray<{ event?: string; data: unknown }>, done?: string): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const { event, data } of events) response.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
  response.end(done);
}

/** OpenAI's chat completions, as the executor calls an openai-compatible upstream. */
const CHAT_COMPLETIONS: ModelWire = {
  path: '/chat/completions',
  tools: (body) =>
    ((body.tools ?? []) as Array<{ function?: { name?: string; parameters?: { properties?: OfferedTool['properties'] } } }>).map((tool) => ({
      name: tool.function?.name ?? '',
      properties: tool.function?.parameters?.properties ?? {},
    })),
  toolOutput: (body) => {
    const message = ((body.messages ?? []) as Array<{ role?: string; content?: unknown; tool_call_id?: string }>).find(
      (candidate) => candidate.role === 'tool' && candidate.tool_call_id === CALL_ID,
    );
    return message && contentText(message.content);
  },
  send: (request, response, answer) => {
    const base = { id: `chatcmpl-codex-${Date.now()}`, created: Math.floor(Date.now() / 1000), model: String(request.body.model) };
    const toolCalls = answer.call && [{ index: 0, id: CALL_ID, type: 'function', function: answer.call }];
    const finishReason = answer.call ? 'tool_calls' : 'stop';
    const usage = { prompt_tokens: USAGE.input, completion_tokens: USAGE.output, total_tokens: USAGE.input + USAGE.output };
    if (!request.body.stream) {
      const message = { role: 'assistant', content: answer.text ?? null, tool_calls: toolCalls };
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finishReason }], usage }));
      return;
    }
    const chunk = { ...base, object: 'chat.completion.chunk' };
    const delta = { role: 'assistant', content: answer.text ?? null, tool_calls: toolCalls };
    writeEvents(
      response,
      [
        { data: { ...chunk, choices: [{ index: 0, delta, finish_reason: null }] } },
        { data: { ...chunk, choices: [{ index: 0, delta: {}, finish_reason: finishReason }] } },
        { data: { ...chunk, choices: [], usage } },
      ],
      'data: [DONE]\n\n',
    );
  },
};

/** Anthropic's Messages API, streamed (Messages SSE) or whole. */
const ANTHROPIC_MESSAGES: ModelWire = {
  path: '/v1/messages',
  tools: (body) =>
    ((body.tools ?? []) as Array<{ name?: string; input_schema?: { properties?: OfferedTool['properties'] } }>).map((tool) => ({
      name: tool.name ?? '',
      properties: tool.input_schema?.properties ?? {},
    })),
  toolOutput: (body) => {
    for (const message of (body.messages ?? []) as Array<{ content?: unknown }>) {
      if (!Array.isArray(message.content)) continue;
      for (const block of message.content as Array<{ type?: string; tool_use_id?: string; content?: unknown }>) {
        if (block.type === 'tool_result' && block.tool_use_id === CALL_ID) return contentText(block.content);
      }
    }
    return undefined;
  },
  send: (request, response, answer) => {
    const block = answer.call ? { type: 'tool_use', id: CALL_ID, name: answer.call.name, input: {} } : { type: 'text', text: '' };
    const stopReason = answer.call ? 'tool_use' : 'end_turn';
    const message = { id: `msg_codex_${Date.now()}`, type: 'message', role: 'assistant', model: String(request.body.model), stop_sequence: null };
    if (!request.body.stream) {
      const content = answer.call ? [{ ...block, input: JSON.parse(answer.call.arguments) }] : [{ type: 'text', text: answer.text }];
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ ...message, content, stop_reason: stopReason, usage: { input_tokens: USAGE.input, output_tokens: USAGE.output } }));
      return;
    }
    const delta = answer.call ? { type: 'input_json_delta', partial_json: answer.call.arguments } : { type: 'text_delta', text: answer.text };
    writeEvents(response, [
      {
        event: 'message_start',
        data: { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { input_tokens: USAGE.input, output_tokens: 1 } } },
      },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: block } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: { type: 'message_delta', delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: USAGE.output } },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  },
};

/** The scripted model on a wire, as a fake upstream's responder. */
function scriptedModel(wire: ModelWire, options: ScriptOptions): Responder {
  return (request, response) => {
    if (!request.path.endsWith(wire.path)) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const toolOutput = wire.toolOutput(request.body);
    if (toolOutput !== undefined) {
      options.turns.push({ kind: 'answer', toolOutput });
      wire.send(request, response, { text: toolOutput.includes(options.expectedOutput) ? options.answer : 'The command output was missing.' });
      return;
    }
    const call = shellCall(wire.tools(request.body), options.command);
    if (!call) {
      options.turns.push({ kind: 'other' });
      wire.send(request, response, { text: 'No shell tool was offered.' });
      return;
    }
    options.turns.push({ kind: 'tool-call', tool: call.name });
    wire.send(request, response, { call: { name: call.name, arguments: JSON.stringify(call.arguments) } });
  };
}

/** The scripted model speaking OpenAI's chat completions (an openai-compatible upstream). */
export function chatCompletionsModel(options: ScriptOptions): Responder {
  return scriptedModel(CHAT_COMPLETIONS, options);
}

/** The scripted model speaking Anthropic's Messages API. */
export function anthropicMessagesModel(options: ScriptOptions): Responder {
  return scriptedModel(ANTHROPIC_MESSAGES, options);
}

/** A request the recording proxy passed on to the gateway, and the gateway's status. */
export interface ProxiedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  status?: number;
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
 * A pass-through HTTP proxy in front of the gateway that records each request's method, path and
 * status (and its headers), bodies streamed both ways untouched: what the CLI asked of the gateway, for the test's
 * assertions and a failure's report (the edge does not log requests).
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
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
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (data: Buffer) => {
    stdout += data.toString();
  });
  child.stderr.on('data', (data: Buffer) => {
    stderr += data.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
  const code = await new Promise<number | null>((resolve) => {
    child.once('close', resolve);
    // No binary (node_modules without the optional platform package): a failure with the reason.
    child.once('error', (error) => {
      stderr += String(error);
      resolve(null);
    });
  });
  clearTimeout(timer);
  return { code, stdout, stderr };
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    attempts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

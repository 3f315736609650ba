/**
 * A scripted model behind the gateway for the Codex CLI and Claude Code tests, speaking OpenAI's
 * chat completions (what the executor sends an openai-compatible upstream): asked with the CLI's
 * tools, it calls the CLI's shell tool with a command; asked again with that call's output as a
 * tool message, it answers with text. The shell tool's name and argument shape are taken from the
 * tools of the request (Codex has offered `shell` with an argv array, `shell_command` with a string
 * and `exec_command` with `cmd` across versions; Claude Code offers `Bash` with a `command`
 * string), so the script follows the installed CLI. The same script speaks Anthropic's Messages
 * API (streamed events or whole) for a Claude model, and thinks as Claude does when the request
 * turns thinking on (Claude Code sends `thinking: {type: "adaptive"}`): its tool call comes after
 * a signed thinking block, and a later request whose tool-use turn lacks that block first is
 * refused with Anthropic's 400 (anthropic-thinking-upstream.ts). Asked to summarize the conversation
 * (a compaction, the gateway's or Codex's own), it answers a summary naming the command's output when the
 * conversation had it; a later request carrying that summary in place of the tool output is
 * answered as if it had the output.
 */
import type { ServerResponse } from 'node:http';
import type { ReceivedRequest, Responder } from '@gateway/testing';
import { refuse, sendMessage, thinkingBlock, thinkingRefusal } from './anthropic-thinking-upstream.js';

/**
 * How a compaction's summary is asked for, and how the summary is handed back: by the gateway
 * (edge's responses-compaction.ts, Codex's remote compaction) or by Codex itself (its local
 * compaction, with a custom provider).
 */
const COMPACTION_ASKS = ['Your context window is about to be compacted', 'CONTEXT CHECKPOINT COMPACTION'];
const COMPACTED_SUMMARIES = ['The earlier part of this conversation was compacted', 'Another language model started to solve this problem'];
/** Codex's shell tools, most recent first, then Claude Code's. */
const SHELL_TOOLS = ['exec_command', 'shell_command', 'shell', 'Bash'];
const CALL_ID = 'call_codex_shell_1';
/** The usage each answer reports, for the metering assertions. */
export const USAGE = { input: 120, output: 15 };

/** One request the scripted model answered, and how. */
export interface ScriptedTurn {
  kind: 'tool-call' | 'answer' | 'compaction' | 'other';
  /** The tool output the answer turn received. */
  toolOutput?: string;
  /** The shell tool the call named. */
  tool?: string;
  /** The request's `thinking` (Messages API only), as it reached the upstream. */
  thinking?: unknown;
  /** The first block of the assistant turn that made the call, as the answer turn received it (Messages API only). */
  callTurnStart?: unknown;
  /** The upstream refused the request (Anthropic's 400), with this message. */
  refused?: string;
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
  /**
   * Call this tool instead of the shell: the first offered tool whose name ends with `suffix` (a
   * CLI prefixes an MCP server's tools with its own namespace), with these arguments.
   */
  tool?: { suffix: string; arguments: Record<string, unknown> };
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
  /** What the provider refuses in a request (its 400 message); undefined when it takes it. */
  refusal?(body: Record<string, unknown>): string | undefined;
  /** Adds what the request shows of the provider's own features (thinking) to its turn. */
  observe?(body: Record<string, unknown>, turn: ScriptedTurn): void;
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
  refusal: thinkingRefusal,
  observe: (body, turn) => {
    if (body.thinking !== undefined) turn.thinking = body.thinking;
    for (const message of (body.messages ?? []) as Array<{ role?: string; content?: unknown }>) {
      const blocks = Array.isArray(message.content) ? (message.content as Array<{ type?: string; id?: string }>) : [];
      if (message.role === 'assistant' && blocks.some((block) => block.type === 'tool_use' && block.id === CALL_ID)) turn.callTurnStart = blocks[0];
    }
  },
  send: (request, response, answer) => {
    const thinkingType = (request.body.thinking as { type?: string } | undefined)?.type;
    if (answer.call && (thinkingType === 'enabled' || thinkingType === 'adaptive')) {
      const thought = thinkingBlock(`I will run the command with the ${answer.call.name} tool.`);
      const call = { type: 'tool_use', id: CALL_ID, name: answer.call.name, input: JSON.parse(answer.call.arguments) };
      sendMessage(request, response, [thought, call], USAGE);
      return;
    }
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
    const refusal = wire.refusal?.(request.body);
    if (refusal !== undefined) {
      options.turns.push({ kind: 'other', refused: refusal });
      refuse(response, refusal);
      return;
    }
    const requestText = JSON.stringify(request.body);
    const toolOutput = wire.toolOutput(request.body);
    if (COMPACTION_ASKS.some((ask) => requestText.includes(ask))) {
      options.turns.push({ kind: 'compaction', toolOutput });
      const summary = toolOutput?.includes(options.expectedOutput) ? `The shell command ran; its output was ${options.expectedOutput}.` : 'Nothing ran yet.';
      wire.send(request, response, { text: summary });
      return;
    }
    const compacted = COMPACTED_SUMMARIES.some((summary) => requestText.includes(summary)) && requestText.includes(`its output was ${options.expectedOutput}`);
    if (toolOutput !== undefined || compacted) {
      const turn: ScriptedTurn = { kind: 'answer', toolOutput: toolOutput ?? options.expectedOutput };
      wire.observe?.(request.body, turn);
      options.turns.push(turn);
      wire.send(request, response, {
        text: (toolOutput ?? options.expectedOutput).includes(options.expectedOutput) ? options.answer : 'The command output was missing.',
      });
      return;
    }
    const offered = wire.tools(request.body);
    const named = options.tool && offered.find((tool) => tool.name.endsWith(options.tool!.suffix));
    const call = options.tool ? named && { name: named.name, arguments: options.tool.arguments } : shellCall(offered, options.command);
    if (!call) {
      options.turns.push({ kind: 'other' });
      wire.send(request, response, { text: 'No shell tool was offered.' });
      return;
    }
    const turn: ScriptedTurn = { kind: 'tool-call', tool: call.name };
    wire.observe?.(request.body, turn);
    options.turns.push(turn);
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

/**
 * Claude as Bedrock serves it, for the fake Bedrock (@gateway/testing startFakeBedrock): answers
 * Converse and ConverseStream in Bedrock's shapes, thinks when the request turns Claude's thinking
 * on (`additionalModelRequestFields.thinking`, enabled or adaptive) and signs its reasoning, and
 * refuses as Bedrock relays Claude's refusal (400 ValidationException) a later request whose
 * assistant turn with a toolUse does not start with that signed reasoning block. A request with
 * cachePoint blocks reports cache reads and writes in its usage. Either it plays a generic model
 * (calls the first offered tool with `{"city":"Oslo"}`, then answers with the tool's result), or,
 * given a script, the CLI script of codex-cli-upstream.ts (the shell tool, then the answer).
 */
import type { BedrockReply, BedrockRequest, BedrockStreamMessage } from '@gateway/testing';
import { signatureOf } from './anthropic-thinking-upstream.js';
import { shellCall, USAGE, type ScriptedTurn, type ScriptOptions } from './codex-cli-upstream.js';

/** The cache counts a request with cachePoint blocks reports. */
export const CACHE_USAGE = { read: 1000, written: 200 };

type Block = Record<string, unknown> & {
  text?: string;
  toolUse?: { toolUseId?: string; name?: string; input?: unknown };
  toolResult?: { toolUseId?: string; content?: Array<{ text?: string }> };
  reasoningContent?: { reasoningText?: { text?: string; signature?: string }; redactedContent?: string };
};
type Message = { role?: string; content?: Block[] };
type Body = {
  messages?: Message[];
  system?: Block[];
  toolConfig?: { tools?: Array<{ toolSpec?: { name?: string; inputSchema?: { json?: { properties?: Record<string, { type?: string }> } } } }> };
  additionalModelRequestFields?: { thinking?: { type?: string } };
};

/** The content an answer has: reasoning, text, a tool call. */
type AnswerBlock = { reasoning: string } | { text: string } | { toolUse: { toolUseId: string; name: string; input: Record<string, unknown> } };

/** Whether the request turns thinking on. */
function thinkingOn(body: Body): boolean {
  return ['enabled', 'adaptive'].includes(String(body.additionalModelRequestFields?.thinking?.type));
}

/** Claude's refusal (as Bedrock relays it) of a tool-use turn that does not start with the signed reasoning; undefined when fine. */
export function bedrockThinkingRefusal(body: Body): string | undefined {
  if (!thinkingOn(body)) return undefined;
  for (const [index, message] of (body.messages ?? []).entries()) {
    const blocks = message.content ?? [];
    if (message.role !== 'assistant' || !blocks.some((block) => block.toolUse)) continue;
    const first = blocks[0]?.reasoningContent;
    if (first?.redactedContent !== undefined) continue;
    if (!first?.reasoningText) {
      return `The model returned the following errors: messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${Object.keys(blocks[0] ?? {})[0] ?? 'nothing'}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`;
    }
    if (first.reasoningText.signature !== signatureOf(String(first.reasoningText.text ?? ''))) {
      return `The model returned the following errors: messages.${index}.content.0: Invalid \`signature\` in \`thinking\` block`;
    }
  }
  return undefined;
}

function hasCachePoint(body: Body): boolean {
  const blocks = [...(body.system ?? []), ...(body.messages ?? []).flatMap((message) => message.content ?? []), ...((body.toolConfig?.tools ?? []) as Block[])];
  return blocks.some((block) => 'cachePoint' in block);
}

/** The text of the tool result for `toolUseId` (any, when undefined) in the conversation. */
function toolResultText(body: Body, toolUseId?: string): string | undefined {
  for (const message of body.messages ?? []) {
    for (const block of message.content ?? []) {
      if (block.toolResult && (toolUseId === undefined || block.toolResult.toolUseId === toolUseId)) {
        return (block.toolResult.content ?? []).map((part) => part.text ?? '').join('');
      }
    }
  }
  return undefined;
}

function usageOf(body: Body) {
  const cache = hasCachePoint(body) ? { cacheReadInputTokens: CACHE_USAGE.read, cacheWriteInputTokens: CACHE_USAGE.written } : {};
  const cacheTotal = hasCachePoint(body) ? CACHE_USAGE.read + CACHE_USAGE.written : 0;
  return { inputTokens: USAGE.input, outputTokens: USAGE.output, totalTokens: USAGE.input + USAGE.output + cacheTotal, ...cache };
}

/** The answer as a whole Converse body, or as ConverseStream messages. */
function reply(request: BedrockRequest, answer: AnswerBlock[]): BedrockReply {
  const body = request.body as Body;
  const stopReason = answer.some((block) => 'toolUse' in block) ? 'tool_use' : 'end_turn';
  const usage = usageOf(body);
  if (request.operation === 'converse') {
    const content = answer.map((block) =>
      'reasoning' in block ? { reasoningContent: { reasoningText: { text: block.reasoning, signature: signatureOf(block.reasoning) } } } : block,
    );
    return { kind: 'converse', body: { output: { message: { role: 'assistant', content } }, stopReason, usage, metrics: { latencyMs: 100 } } };
  }
  const messages: BedrockStreamMessage[] = [{ event: 'messageStart', payload: { role: 'assistant' } }];
  answer.forEach((block, contentBlockIndex) => {
    if ('reasoning' in block) {
      const middle = Math.floor(block.reasoning.length / 2);
      for (const text of [block.reasoning.slice(0, middle), block.reasoning.slice(middle)]) {
        messages.push({ event: 'contentBlockDelta', payload: { contentBlockIndex, delta: { reasoningContent: { text } } } });
      }
      messages.push({ event: 'contentBlockDelta', payload: { contentBlockIndex, delta: { reasoningContent: { signature: signatureOf(block.reasoning) } } } });
    } else if ('toolUse' in block) {
      const { toolUseId, name, input } = block.toolUse;
      messages.push({ event: 'contentBlockStart', payload: { contentBlockIndex, start: { toolUse: { toolUseId, name } } } });
      const json = JSON.stringify(input);
      for (const piece of [json.slice(0, 5), json.slice(5)])
        messages.push({ event: 'contentBlockDelta', payload: { contentBlockIndex, delta: { toolUse: { input: piece } } } });
    } else {
      messages.push({ event: 'contentBlockDelta', payload: { contentBlockIndex, delta: { text: block.text } } });
    }
    messages.push({ event: 'contentBlockStop', payload: { contentBlockIndex } });
  });
  messages.push({ event: 'messageStop', payload: { stopReason } }, { event: 'metadata', payload: { usage, metrics: { latencyMs: 100 } } });
  return { kind: 'stream', messages };
}

/** The tools a request offers, as the CLI script reads them. */
function offeredTools(body: Body) {
  return (body.toolConfig?.tools ?? []).flatMap((tool) =>
    tool.toolSpec ? [{ name: tool.toolSpec.name ?? '', properties: tool.toolSpec.inputSchema?.json?.properties ?? {} }] : [],
  );
}

const SCRIPT_CALL_ID = 'tooluse_bedrock_shell_1';

/** Claude on Bedrock: the generic model, or the CLI script when `script` is given. */
export function bedrockClaude(script?: ScriptOptions): (request: BedrockRequest) => BedrockReply {
  return (request) => {
    const body = request.body as Body;
    const refusal = bedrockThinkingRefusal(body);
    if (refusal) {
      script?.turns.push({ kind: 'other', refused: refusal });
      return { kind: 'error', status: 400, errorType: 'ValidationException', message: refusal };
    }
    const thought: AnswerBlock[] = thinkingOn(body) ? [{ reasoning: 'The user asks about Oslo; I should use the tool first.' }] : [];
    if (script) return scripted(request, body, script);
    const result = toolResultText(body);
    const tools = offeredTools(body);
    if (result === undefined && tools.length > 0) {
      return reply(request, [...thought, { toolUse: { toolUseId: 'tooluse_bedrock_1', name: tools[0]!.name, input: { city: 'Oslo' } } }]);
    }
    return reply(request, [...thought, { text: result === undefined ? 'Hello from Claude on Bedrock.' : `The tool said: ${result}` }]);
  };
}

function scripted(request: BedrockRequest, body: Body, script: ScriptOptions): BedrockReply {
  const observe = (turn: ScriptedTurn) => {
    turn.thinking = body.additionalModelRequestFields?.thinking;
    for (const message of body.messages ?? []) {
      const blocks = message.content ?? [];
      if (message.role === 'assistant' && blocks.some((block) => block.toolUse?.toolUseId === SCRIPT_CALL_ID)) turn.callTurnStart = blocks[0];
    }
    return turn;
  };
  const output = toolResultText(body, SCRIPT_CALL_ID);
  if (output !== undefined) {
    script.turns.push(observe({ kind: 'answer', toolOutput: output }));
    return reply(request, [{ text: output.includes(script.expectedOutput) ? script.answer : 'The command output was missing.' }]);
  }
  const call = shellCall(offeredTools(body), script.command);
  if (!call) {
    script.turns.push({ kind: 'other' });
    return reply(request, [{ text: 'No shell tool was offered.' }]);
  }
  script.turns.push(observe({ kind: 'tool-call', tool: call.name }));
  const thought: AnswerBlock[] = thinkingOn(body) ? [{ reasoning: `I will run the command with the ${call.name} tool.` }] : [];
  return reply(request, [...thought, { toolUse: { toolUseId: SCRIPT_CALL_ID, name: call.name, input: call.arguments } }]);
}

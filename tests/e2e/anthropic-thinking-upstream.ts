/**
 * A fake Anthropic upstream that thinks, in Anthropic's real wire format: with `thinking` on, each
 * answer starts with a signed `thinking` block (whole, or streamed as `thinking_delta` and
 * `signature_delta` events), and a request whose assistant turn with `tool_use` does not start
 * with the thinking block the fake signed is refused with Anthropic's 400, as Anthropic refuses
 * it. The signature is a digest of the thinking text, so a block changed on the way fails too.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ReceivedRequest, Responder } from '@gateway/testing';

/** A content block as the fake reads it. */
type Block = { type?: string; thinking?: string; signature?: string; [field: string]: unknown };

/** The signature the fake gives a thinking text (and checks when the block comes back). */
export function signatureOf(thinking: string): string {
  return `sig-${createHash('sha256').update(thinking).digest('base64url')}`;
}

/**
 * Anthropic's refusal of a request with thinking on whose assistant turn with tool_use does not
 * start with a thinking block carrying a valid signature; undefined when the request is fine.
 */
export function thinkingRefusal(body: Record<string, unknown>): string | undefined {
  const thinking = body.thinking as { type?: string } | undefined;
  if (thinking?.type !== 'enabled' && thinking?.type !== 'adaptive') return undefined;
  const messages = (body.messages ?? []) as Array<{ role?: string; content?: unknown }>;
  for (const [index, message] of messages.entries()) {
    if (message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    const blocks = message.content as Block[];
    if (!blocks.some((block) => block.type === 'tool_use')) continue;
    const first = blocks[0];
    if (first?.type === 'redacted_thinking') continue;
    if (first?.type !== 'thinking')
      return `messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first?.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
    if (first.signature !== signatureOf(String(first.thinking ?? ''))) return `messages.${index}.content.0: Invalid \`signature\` in \`thinking\` block`;
  }
  return undefined;
}

/** Answers with Anthropic's 400 envelope. */
export function refuse(response: ServerResponse, message: string): void {
  response.writeHead(400, { 'content-type': 'application/json', 'request-id': 'req_fake_thinking' });
  response.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }));
}

/** Writes a Messages stream of `content` (thinking blocks streamed as Anthropic streams them). */
export function streamMessage(response: ServerResponse, message: Record<string, unknown>, content: Block[], usage: { input: number; output: number }): void {
  const events: Array<Record<string, unknown>> = [
    {
      type: 'message_start',
      message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: 1 } },
    },
  ];
  content.forEach((block, index) => {
    if (block.type === 'thinking') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      const text = String(block.thinking);
      const middle = Math.floor(text.length / 2);
      for (const piece of [text.slice(0, middle), text.slice(middle)])
        events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } });
    } else if (block.type === 'tool_use') {
      events.push({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    } else {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: block.text } });
    }
    events.push({ type: 'content_block_stop', index });
  });
  events.push({ type: 'message_delta', delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { output_tokens: usage.output } });
  events.push({ type: 'message_stop' });
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const event of events) response.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
  response.end();
}

/** Writes `content` as a whole Message, or streamed when the request asked for a stream. */
export function sendMessage(request: ReceivedRequest, response: ServerResponse, content: Block[], usage = { input: 40, output: 12 }): void {
  const stopReason = content.some((block) => block.type === 'tool_use') ? 'tool_use' : 'end_turn';
  const message = { id: `msg_thinking_${Date.now()}`, type: 'message', role: 'assistant', model: String(request.body.model), stop_reason: stopReason };
  if (request.body.stream === true) {
    streamMessage(response, message, content, usage);
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ ...message, content, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: usage.output } }));
}

/** A signed thinking block of `text`. */
export function thinkingBlock(text: string): Block {
  return { type: 'thinking', thinking: text, signature: signatureOf(text) };
}

/**
 * The thinking model: refuses what Anthropic refuses (above); with thinking on, thinks first.
 * Offered tools and no tool result yet: calls the first tool (`{"city":"Oslo"}`); otherwise
 * answers text, naming the tool result it got.
 */
export function thinkingModel(): Responder {
  return (request, response) => {
    const refusal = thinkingRefusal(request.body);
    if (refusal) {
      refuse(response, refusal);
      return;
    }
    const thinkingOn = ['enabled', 'adaptive'].includes(String((request.body.thinking as { type?: string } | undefined)?.type));
    const thought = thinkingOn ? [thinkingBlock('The user asks about Oslo; I should use the tool first.')] : [];
    const messages = (request.body.messages ?? []) as Array<{ content?: unknown }>;
    const result = messages
      .flatMap((message) => (Array.isArray(message.content) ? (message.content as Block[]) : []))
      .find((block) => block.type === 'tool_result');
    const tools = (request.body.tools ?? []) as Array<{ name?: string }>;
    if (!result && tools.length > 0) {
      sendMessage(request, response, [...thought, { type: 'tool_use', id: 'toolu_thinking_1', name: String(tools[0]!.name), input: { city: 'Oslo' } }]);
      return;
    }
    sendMessage(request, response, [
      ...thought,
      { type: 'text', text: result ? `The tool said: ${JSON.stringify(result.content)}` : 'Hello from a thinking model.' },
    ]);
  };
}

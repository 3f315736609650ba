/**
 * The guardrails of an MCP tools/call at /mcp: the call's arguments are checked before they reach
 * the upstream server (POINT_TOOL_ARGUMENTS: a block answers a JSON-RPC error and forwards
 * nothing, a mask forwards the masked arguments), and the result's text content before it reaches
 * the caller (POINT_TOOL_RESULT: a block replaces the result with an `isError` result naming the
 * policy, as MCP reports a tool's failure; a mask masks; a flag passes).
 */
import type { GuardText } from './guard-context.js';
import { blockedMessage, type GuardedRequest } from './request-guard.js';

/** A JSON-RPC error code of the gateway: a guardrail policy refused a tools/call's arguments. */
export const BLOCKED_CODE = -32005;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Leaf extends GuardText {
  holder: Record<string, Json> | Json[];
  field: string | number;
}

/** Every string of a JSON value, with its path below `at` (`params.arguments.query`, `params.arguments.items[0]`). */
function stringLeaves(value: Json, at: string, holder: Leaf['holder'], field: string | number, leaves: Leaf[]): void {
  if (typeof value === 'string') {
    if (value) leaves.push({ path: at, text: value, holder, field });
  } else if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) stringLeaves(item, `${at}[${index}]`, value, index, leaves);
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) stringLeaves(item, `${at}.${key}`, value, key, leaves);
  }
}

function writeLeaves(leaves: readonly Leaf[], texts: readonly { text?: string }[]): boolean {
  let changed = false;
  leaves.forEach((leaf, index) => {
    const text = texts[index]?.text;
    if (text === undefined || text === leaf.text) return;
    (leaf.holder as Record<string | number, Json>)[leaf.field] = text;
    changed = true;
  });
  return changed;
}

function parseObject(text: string): Record<string, Json> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, Json>) : undefined;
  } catch {
    return undefined;
  }
}

/** What becomes of a tools/call message: forwarded (perhaps masked), or answered at once with an error. */
export type ArgumentsOutcome = { forward: string } | { answer: string };

/** Checks a tools/call message's `params.arguments`; a message that is no JSON object is forwarded as it is (the MCP service answers it). */
export async function guardToolArguments(guard: GuardedRequest, id: string | number | null, messageJson: string): Promise<ArgumentsOutcome> {
  if (!guard.covers('POINT_TOOL_ARGUMENTS')) return { forward: messageJson };
  const message = parseObject(messageJson);
  const params = message?.params;
  if (!message || !params || typeof params !== 'object' || Array.isArray(params) || params.arguments === undefined) return { forward: messageJson };
  const leaves: Leaf[] = [];
  stringLeaves(params.arguments, 'params.arguments', params, 'arguments', leaves);
  const response = await guard.check('POINT_TOOL_ARGUMENTS', leaves, true);
  if (response.blocked) {
    return { answer: JSON.stringify({ jsonrpc: '2.0', id, error: { code: BLOCKED_CODE, message: blockedMessage("The tool call's arguments", response) } }) };
  }
  return { forward: writeLeaves(leaves, response.texts) ? JSON.stringify(message) : messageJson };
}

/** Checks the text content of a tools/call's result; returns the message to send. */
export async function guardToolResult(guard: GuardedRequest, messageJson: string): Promise<string> {
  if (!guard.covers('POINT_TOOL_RESULT')) return messageJson;
  const message = parseObject(messageJson);
  const result = message?.result;
  if (!message || !result || typeof result !== 'object' || Array.isArray(result) || !Array.isArray(result.content)) return messageJson;
  const leaves: Leaf[] = [];
  result.content.forEach((item, index) => {
    if (item && typeof item === 'object' && !Array.isArray(item) && item.type === 'text' && typeof item.text === 'string' && item.text)
      leaves.push({ path: `result.content[${index}].text`, text: item.text, holder: item, field: 'text' });
  });
  const response = await guard.check('POINT_TOOL_RESULT', leaves, true);
  if (response.blocked) {
    message.result = { content: [{ type: 'text', text: blockedMessage("The tool's result", response) }], isError: true };
    return JSON.stringify(message);
  }
  return writeLeaves(leaves, response.texts) ? JSON.stringify(message) : messageJson;
}

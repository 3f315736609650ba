/**
 * The texts of a completion a guardrail checks, each with where it sits, and the way back: the
 * input's texts (every message's content and content parts' text, tool calls' arguments, tool
 * results, the system message; an embeddings input) as the executor will receive them, and the
 * texts of a whole answer (content, refusal, tool calls' arguments). A masked text is written back
 * in its place.
 */
import type { ChatRequest, ChatResponseOutput } from '@gateway/proto';
import type { GuardText } from './guard-context.js';

/** One text and the field it was read from, to write a masked text back. */
export interface TextSlot extends GuardText {
  readonly holder: Record<string | number, unknown>;
  readonly field: string | number;
}

/**
 * The texts of a request as its executor will receive them, in body order: the paths are those
 * of the chat messages every API is translated to (`messages[2].content[0].text`), or of an
 * embeddings `input[i]`.
 */
export function inputTexts(request: ChatRequest, embeddings: { texts: string[] } | undefined): TextSlot[] {
  const slots: TextSlot[] = [];
  if (embeddings) {
    embeddings.texts.forEach((text, index) => {
      slots.push({ path: `input[${index}]`, text, holder: embeddings.texts as unknown as Record<number, unknown>, field: index });
    });
    return slots;
  }
  (request.messages ?? []).forEach((message, index) => {
    const at = `messages[${index}]`;
    if (typeof message.text === 'string' && message.text) slots.push({ path: `${at}.content`, text: message.text, holder: message as never, field: 'text' });
    (message.parts?.parts ?? []).forEach((part, partIndex) => {
      if (typeof part.text === 'string' && part.text)
        slots.push({ path: `${at}.content[${partIndex}].text`, text: part.text, holder: part as never, field: 'text' });
    });
    (message.tool_calls ?? []).forEach((call, callIndex) => {
      const fn = call.function;
      if (fn?.arguments) slots.push({ path: `${at}.tool_calls[${callIndex}].function.arguments`, text: fn.arguments, holder: fn as never, field: 'arguments' });
    });
  });
  return slots;
}

/** The texts of a whole answer, in body order (`choices[0].message.content`). */
export function answerTexts(response: ChatResponseOutput): TextSlot[] {
  const slots: TextSlot[] = [];
  response.choices.forEach((choice, index) => {
    const message = choice.message;
    if (!message) return;
    const at = `choices[${index}].message`;
    if (message.content) slots.push({ path: `${at}.content`, text: message.content, holder: message as never, field: 'content' });
    if (message.refusal) slots.push({ path: `${at}.refusal`, text: message.refusal, holder: message as never, field: 'refusal' });
    message.tool_calls.forEach((call, callIndex) => {
      const fn = call.function;
      if (fn?.arguments) slots.push({ path: `${at}.tool_calls[${callIndex}].function.arguments`, text: fn.arguments, holder: fn as never, field: 'arguments' });
    });
  });
  return slots;
}

/** Writes each slot's new text (the check's TextResult, in the same order) where it was read. */
export function writeBack(slots: readonly TextSlot[], texts: readonly { text?: string }[]): void {
  slots.forEach((slot, index) => {
    const text = texts[index]?.text;
    if (text !== undefined && text !== slot.text) slot.holder[slot.field] = text;
  });
}

/**
 * A whole answer a policy blocked, as OpenAI and Azure answer one their filter stopped: each
 * choice's content, refusal and tool calls removed, finish_reason content_filter (the Messages API
 * renders it as stop_reason `refusal`, the Responses API as status `incomplete` with reason
 * `content_filter`).
 */
export function blankAnswer(response: ChatResponseOutput): void {
  for (const choice of response.choices) {
    choice.finish_reason = 'FINISH_REASON_CONTENT_FILTER';
    const message = choice.message;
    if (!message) continue;
    delete (message as { content?: string }).content;
    delete (message as { refusal?: string }).refusal;
    delete (message as { thinking?: unknown }).thinking;
    message.tool_calls = [];
  }
}

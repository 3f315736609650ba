/**
 * Hostile requests to the simulated provider, each a shape that once made it take seconds to
 * hours: the unit tests check what it answers to them, `pnpm bench simulated` how long it takes
 * (speed is measured in the bench, never timed in a test).
 */
import type { ChatRequestOutput, ToolOutput } from '@gateway/proto';

/** A system message and one user message of `text`, with `extra` fields. */
export function userRequest(text: string, extra: Partial<ChatRequestOutput> = {}): ChatRequestOutput {
  return {
    messages: [
      { role: 'ROLE_SYSTEM', content: 'text', text: 'You are terse.', tool_calls: [] },
      { role: 'ROLE_USER', content: 'text', text, tool_calls: [] },
    ],
    stop: [],
    tools: [],
    ...extra,
  };
}

/** `count` seven-letter words of 13 letters from `first`: two sets of words that never meet. */
function words(count: number, first: number): string {
  return Array.from({ length: count }, (_, index) =>
    Array.from({ length: 7 }, (_, position) => String.fromCharCode(first + ((index * 31 + position * 7 + (index >> (position + 1))) % 13))).join(''),
  ).join(' ');
}

/** What one 1 MB json_schema const holds. */
export const ECHOED_CONST = '😀'.repeat(1 << 19);

/** The hostile requests, by what each one is. */
export const HOSTILE_REQUESTS = {
  /** One 1 MB word: one pre-tokenizer piece, whose count once took gpt-tokenizer hours (quadratic). */
  oneMegabyteWord: () => userRequest('A'.repeat(1 << 20), { seed: 5 }),
  /** A 1 MB json_schema const to echo, cut at 40 tokens: only the budget is tokenized. */
  echoedConst: () =>
    userRequest('Repeat it.', {
      max_tokens: 40,
      response_format: { type: 'json_schema', json_schema: { name: 'echo', schema_json: JSON.stringify({ const: ECHOED_CONST }) } },
    }),
  /**
   * A 1 MB message and a tool with a 1 MB description whose words (letters a-m) never occur in the
   * message (letters n-z): every word of the description was once searched for in the whole message.
   */
  toolsAgainstMegabytes: () => {
    const tool: ToolOutput = { type: 'function', function: { name: 'lookup', description: words(1 << 17, 97), parameters_json: '{"type":"object"}' } };
    return userRequest(words(1 << 17, 110), { tools: [tool] });
  },
  /** 128 choices with log probabilities of a 4 MB prompt: the conversation is hashed once for all. */
  manyChoicesOfFourMegabytes: () => userRequest('The quick brown fox jumps. '.repeat(155_000), { n: 128, logprobs: true, top_logprobs: 2, seed: 8 }),
} as const;

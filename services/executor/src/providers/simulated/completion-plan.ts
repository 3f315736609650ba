/**
 * What the simulated model answers, decided in full before any timer runs, so a whole response and
 * a stream of the same request are built from the same plan (their contents are equal by
 * construction). This is the simulated provider's "upstream": message conversion (the prompt ->
 * a seed), the choice between text and tool calls, finish reasons and exact usage.
 *
 * Determinism: every random draw comes from a SeededRandom seeded with the model id, the request's
 * `seed` (or "derived" when absent) and the conversation's text, roles and tools, plus the choice
 * index. Same model + same request + same seed -> same output, on any machine.
 *
 * Tool calls, when tools are offered:
 * - tool_choice `none`: never.
 * - a named function: always that one function, one call.
 * - `required`: the tools the rule below selects, or the first tool when it selects none.
 * - `auto` (the default): the tools the rule selects; text when it selects none.
 * - the rule: the LAST message is a user message whose text (case-insensitive) contains the tool's
 *   name, its name with `_`/`-` read as spaces, or a word of 6+ letters of its description.
 * - parallel_tool_calls false keeps only the first selected tool; otherwise one call per tool.
 * Arguments satisfy the tool's parameters schema (see schema-instance.ts).
 *
 * Text: 2 to 5 sentences of plain ASCII words. Stop sequences cut the text before their first
 * occurrence (finish `stop`); then the budget (max_tokens, else the model's max_output_tokens) cuts
 * it to that many tokens (finish `length`, completion_tokens == the budget). response_format
 * json_object gives `{"answer": "<text>"}`, json_schema an instance of the schema.
 *
 * Usage: prompt_tokens = countPromptTokens(request); completion_tokens = the tokens of the content
 * (of a reply cut at the budget: the tokens kept), or for tool calls the tokens of each call's name
 * plus its arguments.
 *
 * Cost: the reply can echo the caller's text (a json_schema `const`, an `enum` value, a tool's
 * parameters), so planning does no work worse than linear in the request, and tokenizes with the
 * time-sliced counters of @gateway/tokens, so a 16 MB request does not hold the executor's event
 * loop: the conversation is hashed once for all choices (SeedPrefix), a reply is tokenized no
 * further than its budget (tokenPrefixAsync), and tools are matched in one pass over the message.
 *
 * Log probabilities (`logprobs: true`): one entry per content piece, with `top_logprobs`
 * alternatives when asked (see token-logprobs.ts). They are drawn from their own random streams, so
 * asking for them does not change the text. A choice that calls tools has none (null on the wire):
 * only message content tokens carry log probabilities.
 */
import type { CatalogModel } from '@gateway/catalog';
import type { ChatRequestOutput, FinishReasonOutput, TokenLogprob, ToolOutput } from '@gateway/proto';
import { countPromptTokensAsync, countTextTokensAsync, messageText, tokenPieces, tokenPrefixAsync } from '@gateway/tokens';
import { generateSchemaInstance, type JsonSchema } from './schema-instance.js';
import { SeededRandom, SeedPrefix } from './seeded-random.js';
import { tokenLogprobs } from './token-logprobs.js';

/** One tool call the simulated model makes. */
export interface PlannedToolCall {
  readonly id: string;
  readonly name: string;
  /** Arguments as a JSON string. */
  readonly arguments: string;
}

/** One choice of the simulated answer. */
export interface PlannedChoice {
  readonly index: number;
  /** The content's token texts in order; joined they are the content. Empty when calling tools. */
  readonly pieces: readonly string[];
  readonly toolCalls: readonly PlannedToolCall[];
  readonly finishReason: FinishReasonOutput;
  readonly completionTokens: number;
  /** One entry per piece when the request asked for logprobs and the choice is text; else absent. */
  readonly logprobs?: readonly TokenLogprob[];
}

/** The whole simulated answer to one request. */
export interface CompletionPlan {
  readonly choices: readonly PlannedChoice[];
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** The most choices one request may ask for, to bound work; OpenAI's own limit is 128. */
const MAX_CHOICES = 128;

const WORDS = [
  'the',
  'gateway',
  'routes',
  'each',
  'request',
  'to',
  'a',
  'model',
  'that',
  'answers',
  'with',
  'care',
  'simulated',
  'tokens',
  'arrive',
  'in',
  'order',
  'and',
  'every',
  'stream',
  'ends',
  'cleanly',
  'quick',
  'brown',
  'fox',
  'jumps',
  'over',
  'lazy',
  'dog',
  'while',
  'clouds',
  'drift',
  'above',
  'quiet',
  'hills',
  'data',
  'flows',
  'through',
  'pipes',
  'between',
  'services',
  'under',
  'clear',
  'contracts',
  'today',
  'engineers',
  'measure',
  'latency',
  'throughput',
  'errors',
  'carefully',
  'before',
  'release',
  'is',
  'ready',
];

function sentence(random: SeededRandom): string {
  const words = Array.from({ length: random.integer(6, 14) }, () => random.pick(WORDS));
  const first = words[0] as string;
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  return `${words.join(' ')}${random.pick(['.', '.', '.', '!', '?'])}`;
}

function paragraph(random: SeededRandom): string {
  return Array.from({ length: random.integer(2, 5) }, () => sentence(random)).join(' ');
}

/** The seed text: everything that makes two requests different, in a stable order. */
function seedText(request: ChatRequestOutput, model: CatalogModel): string {
  const conversation = (request.messages ?? []).map((message) => `${message.role ?? ''}:${messageText(message)}`);
  const tools = (request.tools ?? []).map((tool) => `${tool.function?.name ?? ''}:${tool.function?.parameters_json ?? ''}`);
  const seed = request.seed === undefined ? 'derived' : String(request.seed);
  return [
    model.id,
    seed,
    ...conversation,
    '--tools',
    ...tools,
    '--format',
    request.response_format?.type ?? 'text',
    request.response_format?.json_schema?.schema_json ?? '',
  ].join('\n');
}

function parseSchema(json: string | undefined): JsonSchema | undefined {
  if (!json) return undefined;
  try {
    return JSON.parse(json) as JsonSchema;
  } catch {
    return undefined;
  }
}

/**
 * The tools that `text` (lower-cased) mentions, per the rule in this file's header, in one pass
 * over the text whatever the number of tools and description words: a description word is
 * mentioned when it is a whole word of the text (what `\bword\b` tests: a word of 6 letters or
 * more is matched by a maximal run of `\w` characters equal to it).
 */
function mentionedTools(text: string, tools: readonly ToolOutput[]): Set<ToolOutput> {
  const mentioned = new Set<ToolOutput>();
  const toolsByWord = new Map<string, ToolOutput[]>();
  for (const tool of tools) {
    const name = (tool.function?.name ?? '').toLowerCase();
    if (!name) continue;
    if (text.includes(name) || text.includes(name.replace(/[_-]/g, ' '))) {
      mentioned.add(tool);
      continue;
    }
    for (const word of (tool.function?.description ?? '').toLowerCase().match(/[a-z]{6,}/g) ?? []) {
      const named = toolsByWord.get(word);
      if (!named) toolsByWord.set(word, [tool]);
      else if (named.at(-1) !== tool) named.push(tool);
    }
  }
  if (toolsByWord.size > 0) {
    for (const [word] of text.matchAll(/\w{6,}/g)) for (const tool of toolsByWord.get(word) ?? []) mentioned.add(tool);
  }
  return mentioned;
}

/** The tools the simulated model calls for this request, per the rules in this file's header. */
export function selectTools(request: ChatRequestOutput): ToolOutput[] {
  const tools = (request.tools ?? []).filter((tool) => tool.function?.name);
  if (tools.length === 0) return [];
  const choice = request.tool_choice;
  if (choice?.function_name) {
    const named = tools.find((tool) => tool.function?.name === choice.function_name);
    return [named ?? { type: 'function', function: { name: choice.function_name } }];
  }
  const mode = choice?.mode || 'auto';
  if (mode === 'none') return [];
  const messages = request.messages ?? [];
  const last = messages[messages.length - 1];
  const text = last?.role === 'ROLE_USER' ? messageText(last).toLowerCase() : '';
  const mentioned = text ? mentionedTools(text, tools) : new Set<ToolOutput>();
  let selected = tools.filter((tool) => mentioned.has(tool));
  if (selected.length === 0 && mode === 'required') selected = [tools[0] as ToolOutput];
  return request.parallel_tool_calls === false ? selected.slice(0, 1) : selected;
}

/**
 * The text's tokens as strings, one per streamed chunk. Tokens that are only part of a multi-byte
 * character share a piece, so that every piece is whole text (see tokenPieces).
 */
export function textPieces(text: string): string[] {
  return tokenPieces(text);
}

interface PlannedText {
  readonly pieces: string[];
  readonly finishReason: FinishReasonOutput;
  readonly completionTokens: number;
}

async function planText(request: ChatRequestOutput, model: CatalogModel, random: SeededRandom): Promise<PlannedText> {
  const format = request.response_format?.type;
  let text: string;
  if (format === 'json_schema' && parseSchema(request.response_format?.json_schema?.schema_json) !== undefined) {
    const schema = parseSchema(request.response_format?.json_schema?.schema_json);
    text = JSON.stringify(generateSchemaInstance(schema, random));
  } else if (format === 'json_object' || format === 'json_schema') {
    text = JSON.stringify({ answer: paragraph(random) });
  } else {
    text = paragraph(random);
  }
  const stops = (request.stop ?? []).filter((stop) => stop.length > 0);
  const cut = Math.min(...stops.map((stop) => text.indexOf(stop)).filter((index) => index >= 0));
  if (Number.isFinite(cut)) text = text.slice(0, cut);
  // Cut at a token boundary, tokenizing no further than the budget. completion_tokens is the
  // number of tokens kept, what a model that wrote exactly those would bill: the budget, or a token
  // or two less where the next piece holds the several tokens of one split character.
  const budget = request.max_tokens ?? (model.max_output_tokens > 0 ? model.max_output_tokens : undefined);
  const prefix = await tokenPrefixAsync(text, budget);
  return { pieces: prefix.pieces, finishReason: prefix.complete ? 'FINISH_REASON_STOP' : 'FINISH_REASON_LENGTH', completionTokens: prefix.tokens };
}

/** Decides the whole answer of the simulated model to a request. */
export async function planCompletion(request: ChatRequestOutput, model: CatalogModel): Promise<CompletionPlan> {
  const base = new SeedPrefix(seedText(request, model));
  const tools = selectTools(request);
  const count = Math.min(Math.max(request.n ?? 1, 1), MAX_CHOICES);
  const choices: PlannedChoice[] = [];
  for (let index = 0; index < count; index += 1) {
    const choiceSeed = base.extend(`\n#choice:${index}`);
    const random = new SeededRandom(choiceSeed);
    if (tools.length > 0) {
      const toolCalls = tools.map((tool) => {
        const schema = parseSchema(tool.function?.parameters_json) ?? { type: 'object', properties: {} };
        return {
          id: `call_${random.characters(24, 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')}`,
          name: tool.function?.name ?? '',
          arguments: JSON.stringify(generateSchemaInstance(schema, random)),
        };
      });
      let completionTokens = 0;
      for (const call of toolCalls) completionTokens += (await countTextTokensAsync(call.name)) + (await countTextTokensAsync(call.arguments));
      choices.push({ index, pieces: [], toolCalls, finishReason: 'FINISH_REASON_TOOL_CALLS', completionTokens });
    } else {
      const { pieces, finishReason, completionTokens } = await planText(request, model, random);
      const logprobs =
        request.logprobs === true ? tokenLogprobs(pieces, { seedText: choiceSeed, topCount: request.top_logprobs ?? 0, vocabulary: WORDS }) : undefined;
      choices.push({ index, pieces, toolCalls: [], finishReason, completionTokens, ...(logprobs ? { logprobs } : {}) });
    }
  }
  return {
    choices,
    promptTokens: await countPromptTokensAsync(request),
    completionTokens: choices.reduce((sum, choice) => sum + choice.completionTokens, 0),
  };
}

/**
 * Log probabilities of the simulated model's content tokens, in OpenAI's shape
 * (ChatCompletionTokenLogprob): each token's text, the natural log of its probability, its UTF-8
 * bytes and, when the caller asked for top_logprobs, the most likely tokens at its position.
 *
 * Contracts:
 * - One entry per piece, in order, with the piece's text: joined, the tokens spell the content,
 *   and each `bytes` is exactly the UTF-8 encoding of its `token` (pieces never split a character,
 *   see textPieces), so joining the bytes gives the content's UTF-8 too.
 * - Every logprob is <= 0, and the probabilities at one position sum to at most 1: the chosen
 *   token takes most of the mass, the alternatives share what is left.
 * - `top_logprobs` has exactly `topCount` entries (the chosen token among them), most likely
 *   first, with distinct texts; none when `topCount` is 0.
 * - Deterministic: the same seed text gives the same values. The chosen tokens' logprobs come from
 *   their own random stream, so they do not change with `topCount`.
 */
import type { TokenLogprob, TopLogprob } from '@gateway/proto';
import { SeededRandom, type SeedPrefix } from './seeded-random.js';

/** What shapes the log probabilities of one choice. */
export interface TokenLogprobOptions {
  /** Seeds the values: the same text gives the same log probabilities. */
  readonly seedText: string | SeedPrefix;
  /** Entries of `top_logprobs` per token (the request's top_logprobs, 0 to 20). */
  readonly topCount: number;
  /** Words the alternative tokens are drawn from. */
  readonly vocabulary: readonly string[];
}

/** OpenAI's floor: "-9999.0 is used to signify that the token is very unlikely". */
const VERY_UNLIKELY = -9999;

/** The most of the probability mass the alternatives may share at one position. */
const MAX_DOUBT = 0.6;

const PUNCTUATION = ['.', ',', '!', '?', ';', ':', ' -', '"'];

/** A log probability as a provider reports it: finite, at most 0, 8 significant digits. */
function logOf(probability: number): number {
  if (!(probability > 0)) return VERY_UNLIKELY;
  return Math.max(Number(Math.log(probability).toPrecision(8)), VERY_UNLIKELY);
}

function utf8Bytes(text: string): number[] {
  return [...Buffer.from(text, 'utf8')];
}

/**
 * Candidate texts for the alternatives of a token, shaped like it: the same leading space, a
 * capital when it has one, punctuation first when it is punctuation. Never the token itself.
 */
function candidatesFor(token: string, vocabulary: readonly string[]): string[] {
  const leading = /^\s*/.exec(token)?.[0] ?? '';
  const core = token.slice(leading.length);
  const capital = /^[A-Z]/.test(core);
  const words = vocabulary.map((word) => `${leading}${capital ? word.charAt(0).toUpperCase() + word.slice(1) : word}`);
  const ordered = /[A-Za-z]/.test(core) ? [...words, ...PUNCTUATION] : [...PUNCTUATION, ...words];
  return [...new Set(ordered)].filter((candidate) => candidate !== token);
}

/** Picks `count` distinct candidates in a seeded order. */
function pickDistinct(candidates: string[], count: number, random: SeededRandom): string[] {
  const pool = [...candidates];
  const picked: string[] = [];
  while (picked.length < count && pool.length > 0) {
    picked.push(pool.splice(Math.floor(random.next() * pool.length), 1)[0] as string);
  }
  return picked;
}

/**
 * The `top_logprobs` of one position (topCount > 0): the chosen entry and `topCount - 1`
 * alternatives sharing `doubt`.
 */
function topLogprobsOf(chosen: TopLogprob & { token: string }, doubt: number, options: TokenLogprobOptions, random: SeededRandom): TopLogprob[] {
  const alternatives = pickDistinct(candidatesFor(chosen.token, options.vocabulary), options.topCount - 1, random);
  let remaining = doubt;
  const entries: TopLogprob[] = [chosen];
  for (const alternative of alternatives) {
    const share = remaining * (0.3 + 0.4 * random.next());
    remaining -= share;
    entries.push({ token: alternative, logprob: logOf(share), bytes: utf8Bytes(alternative) });
  }
  return entries.sort((left, right) => (right.logprob as number) - (left.logprob as number));
}

/** The log probabilities of a choice's content tokens, one entry per piece (see the file header). */
export function tokenLogprobs(pieces: readonly string[], options: TokenLogprobOptions): TokenLogprob[] {
  const chosenRandom = new SeededRandom(options.seedText, '\n#logprobs');
  const alternativesRandom = new SeededRandom(options.seedText, '\n#top_logprobs');
  return pieces.map((token) => {
    // Mostly confident, sometimes not: cubing skews the doubt towards 0. Never exactly 0, so the
    // alternatives keep a finite log probability.
    const doubt = MAX_DOUBT * Math.max(chosenRandom.next() ** 3, 1e-9);
    const logprob = logOf(1 - doubt);
    const topLogprobs = options.topCount <= 0 ? [] : topLogprobsOf({ token, logprob, bytes: utf8Bytes(token) }, doubt, options, alternativesRandom);
    return { token, logprob, bytes: utf8Bytes(token), top_logprobs: topLogprobs };
  });
}

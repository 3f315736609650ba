import type { QualityTier } from '@gateway/catalog';
import { countTextTokens } from '@gateway/tokens';

/**
 * A first, hand-written estimate of how likely a prompt needs a strong model, 0..1; the learned
 * chooser replaces it later. It adds up four signals, each capped, so that no single one decides:
 *
 * - length (up to 0.35): log-scaled from 10 tokens (0) to 2,000 tokens (full), since long prompts
 *   carry more context to reason over;
 * - code (up to 0.3): fences, declarations, stack traces, programming verbs;
 * - math (up to 0.3): LaTeX, math symbols, proofs, calculus and algebra words, formulas;
 * - reasoning and structure (up to 0.3): "step by step", "why", "prove", comparisons, design
 *   questions, several questions or a numbered list of requirements.
 *
 * A greeting scores near 0; a long proof or a debugging session with code scores above 0.6.
 */
export function difficultyScore(promptText: string): number {
  const text = promptText.trim();
  if (text === '') return 0;
  const tokens = countTextTokens(text);
  const length = 0.35 * clamp((Math.log(tokens) - Math.log(10)) / (Math.log(2_000) - Math.log(10)));
  const code = Math.min(0.3, 0.15 * matches(text, CODE_MARKERS) + 0.05 * matches(text, CODE_WORDS));
  const math = Math.min(0.3, 0.15 * matches(text, MATH_MARKERS) + 0.05 * matches(text, MATH_WORDS));
  const questions = (text.match(/\?/g) ?? []).length;
  const listItems = (text.match(/^\s*(?:\d+[.)]|[-*])\s+/gm) ?? []).length;
  const reasoning = Math.min(0.3, 0.07 * matches(text, REASONING_WORDS) + (questions > 1 ? 0.05 : 0) + (listItems >= 3 ? 0.05 : 0));
  return round(clamp(length + code + math + reasoning));
}

/**
 * The tier a score asks for: below 0.3 economy, below 0.6 standard, otherwise premium. The
 * bounds put a greeting or a short factual question in economy and need two strong signals (say,
 * code and math, or a long prompt with either) for premium.
 */
export function tierForScore(score: number): QualityTier {
  if (score < 0.3) return 'economy';
  if (score < 0.6) return 'standard';
  return 'premium';
}

const CODE_MARKERS: readonly RegExp[] = [
  /```/,
  /\b(?:function|def|fn|func)\s+\w+\s*\(/,
  /\b(?:class|interface|struct|enum)\s+[A-Z]\w*/,
  /\b(?:import|from)\s+[\w@./'"-]+|#include\s*</,
  /(?:=>|->|::|&&|\|\||!==|===)/,
  /\b(?:SELECT|INSERT|UPDATE|DELETE)\b[\s\S]*\b(?:FROM|INTO|SET|WHERE)\b/,
  /Traceback \(most recent call last\)|\bat \w[\w.]*\s*\(.*:\d+:\d+\)|\b\w+(?:Error|Exception):/,
  /[;{}]\s*$/m,
];

const CODE_WORDS: readonly RegExp[] = [
  /\b(?:debug|refactor|implement|compile|segfault|race condition|deadlock|regex|recursion|recursive)\b/i,
  /\b(?:algorithm|complexity|big-?o|data structure|concurren(?:t|cy)|thread-safe)\b/i,
  /\b(?:typescript|javascript|python|rust|golang|java|c\+\+|sql|kotlin|haskell)\b/i,
];

const MATH_MARKERS: readonly RegExp[] = [
  /\\(?:frac|int|sum|prod|lim|sqrt|mathbb|partial|cdot|leq|geq|forall|exists)\b/,
  /[∫∑∏√∂∞≤≥≠∀∃∈⊆]/,
  /\b[a-z]\s*\^\s*\d|\b\d+\s*[*/^]\s*\d+|\b[a-z]\(\s*[a-z]\s*\)\s*=/,
  /\b(?:prove|proof|theorem|lemma|corollary)\b/i,
];

const MATH_WORDS: readonly RegExp[] = [
  /\b(?:integral|derivative|differential equation|eigen(?:value|vector)s?|matrix|matrices|polynomial|modulo|prime)\b/i,
  /\b(?:probability|expected value|variance|bayes|combinatori\w*|permutations?)\b/i,
  /\b(?:solve for|equation|inequality|converge\w*|induction)\b/i,
];

const REASONING_WORDS: readonly RegExp[] = [
  /\bstep[- ]by[- ]step\b/i,
  /\bwhy\b/i,
  /\b(?:analy[sz]e|evaluate|critique|justify|derive)\b/i,
  /\b(?:compare|trade-?offs?|pros and cons)\b/i,
  /\b(?:design|architect\w*|optimi[sz]e|scal(?:e|ability))\b/i,
];

function matches(text: string, patterns: readonly RegExp[]): number {
  return patterns.filter((pattern) => pattern.test(text)).length;
}

function clamp(value: number): number {
  return Math.min(1, Math.max(0, value));
}

/** Three decimals: enough to compare, stable to print. */
function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

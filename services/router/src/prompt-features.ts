/**
 * The features the `auto` scorer reads from a prompt: about fifty engineered signals chosen
 * because they carry over to prompts unlike the training data (length, structure, math density,
 * code, question type, multi-step cues, the shape of answer options). Word identities (hashed
 * n-grams, word embeddings) were tried and dropped: they learn which subjects the training data
 * holds, and on subjects it does not hold they routed no better than chance (see the README).
 *
 * Contract: a pure function of the text, deterministic, no allocation proportional to more than
 * the first SCANNED_CHARACTERS characters, so that one call stays far below a millisecond even for
 * a 16k-character prompt. Changing a feature changes the meaning of the shipped weights: retrain
 * (`pnpm --filter @gateway/router train`) and ship the new model file with it.
 *
 * Every pattern runs in time linear in the text, hostile text included: a pattern that can start
 * at every character of a run and scan to its end (`^\s*` over blank lines, `\d+\.` over a long
 * number, `if .* would` over a line of "if"s) is written so that it starts once per run. Such a
 * rewrite must find the same matches (prompt-features.test.ts compares them with the originals).
 */

/** Names of the features, in index order; the model file stores them to check. */
export const PROMPT_FEATURE_NAMES = [
  'bias',
  'log_characters',
  'log_words',
  'log_lines',
  'log_sentences',
  'mean_word_length',
  'long_word_share',
  'digit_share',
  'log_numbers',
  'log_distinct_numbers',
  'decimal_or_fraction',
  'log_math_operators',
  'math_notation',
  'equation_like',
  'money_or_unit',
  'quantity_words',
  'word_problem_cues',
  'log_question_marks',
  'asks_what_or_which',
  'asks_why_or_how',
  'asks_how_many_or_much',
  'solve_verbs',
  'explain_verbs',
  'writing_verbs',
  'greeting_or_small_talk',
  'code_syntax',
  'code_words',
  'reasoning_words',
  'conditional_words',
  'negation_words',
  'comparison_words',
  'statement_pairs',
  'enumerated_lines',
  'numeric_options',
  'capitalised_share',
  'log_parentheses',
  'log_quotes',
  'first_or_second_person',
  'short_prompt',
  'option_words',
  'option_length_spread',
  'numeric_option_share',
  'verdict_pair_options',
  'roman_combination_options',
  'all_or_none_option',
  'negated_selection',
  'passage_reference',
  'hypothetical',
  'stem_words',
  'log_distinct_stem_numbers',
  'proof_or_derivation',
] as const;

/** How many features there are. */
export const PROMPT_FEATURE_COUNT = PROMPT_FEATURE_NAMES.length;

/**
 * Only the first characters are read for the costlier patterns: the task is stated at the start,
 * and it bounds the cost of a long prompt.
 */
export const SCANNED_CHARACTERS = 4_000;

/** Prompts shorter than this many words count as short (see the `short_prompt` feature). */
export const SHORT_PROMPT_WORDS = 12;

// Words in any script: letters (with their combining marks), numbers, and each Chinese or Japanese
// character on its own, since those scripts put no spaces between words. Counting only [a-z]
// made every prompt in Russian, Greek or Chinese look like a one-word message.
const WORD = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]|[\p{L}\p{M}]+(?:'[\p{L}\p{M}]+)?|\d+(?:[.,]\d+)*/gu;
const isDigit = (code: number) => code >= 48 && code <= 57;
const NUMBER = /\d+(?:[.,]\d+)*/g;
const count = (text: string, pattern: RegExp): number => {
  pattern.lastIndex = 0;
  let total = 0;
  while (pattern.exec(text) !== null) total += 1;
  return total;
};

// Word lists: transferable cues, never subject names.
const QUANTITY =
  /\b(?:how many|how much|total|each|per|every|times|twice|half|third|quarter|remaining|left over|altogether|in all|more than|less than|fewer|percent|average|rate|ratio)\b/g;
const WORD_PROBLEM =
  /\b(?:buys?|bought|sells?|sold|pays?|paid|earns?|costs?|spends?|spent|saves?|saved|has|had|gives?|gave|needs?|makes?|made|uses?|used|gets?|got|takes?|took)\b/g;
const MONEY_OR_UNIT =
  /[$€£¥%]|\b(?:dollars?|cents?|euros?|hours?|minutes?|seconds?|days?|weeks?|months?|years?|miles?|km|kilometers?|meters?|feet|inches?|pounds?|kg|grams?|liters?|gallons?)\b/g;
const MATH_OPERATORS = /[=+*/^<>×÷−±]|\d\s*-\s*\d/g;
const MATH_NOTATION =
  /\\(?:frac|int|sum|prod|lim|sqrt|mathbb|partial|cdot|leq|geq|infty|forall|exists|pi)\b|[∫∑∏√∂∞≤≥≠∀∃∈⊆πθαβλ]|\b(?:sqrt|log|ln|sin|cos|tan|mod|gcd|lcm)\b|\b[a-z]\s*\^\s*\d|\b[a-z]_\d/g;
const EQUATION_LIKE = /\b[a-z]\s*[=<>]\s*[-\d(a-z]|\d\s*[a-z]\b\s*[-+=]|\b[a-z]\([a-z0-9, ]+\)\s*=/g;
// A decimal starts where a run of digits does (a match never ends inside one, so none is lost).
const DECIMAL_OR_FRACTION = /(?<!\d)\d+\.\d+|\b\d+\/\d+\b/g;
const SOLVE = /\b(?:solve|calculate|compute|find|determine|prove|derive|evaluate|simplify|estimate|show that|what is the value)\b/g;
const EXPLAIN = /\b(?:explain|describe|discuss|analy[sz]e|compare|contrast|justify|summari[sz]e|interpret|why)\b/g;
const WRITING = /\b(?:write|compose|draft|rewrite|story|poem|essay|email|letter|blog|tweet|slogan|song|lyrics|dialogue|script|translate|paraphrase)\b/g;
const GREETING = /\b(?:hi|hello|hey|thanks|thank you|good morning|good evening|how are you|what's up|lol|please)\b/g;
const CODE_SYNTAX =
  /```|[{};]\s*$|=>|->|::|&&|\|\||!==?|===|\b(?:def|function|return|class|import|const|let|var|public|private|void|int|printf|println|console\.log|#include|select\s+\S+\s+from)\b|\b[a-z]+[A-Z][a-zA-Z]*\(|\b[a-z]+_[a-z_]+\b/gm;
const CODE_WORDS =
  /\b(?:code|program|function|script|algorithm|implement|debug|bug|compile|runtime|python|javascript|typescript|java|rust|golang|c\+\+|sql|regex|api|array|string|integer|variable|loop|recursion|complexity)\b/g;
const REASONING =
  /\b(?:step|steps|therefore|thus|hence|because|since|implies|reason|reasoning|logic|conclude|assume|assuming|suppose|given|consider|follows?|must|consequently|argument|valid|infer)\b/g;
const CONDITIONAL = /\b(?:if|unless|when|whenever|then|otherwise|only if|provided)\b/g;
const NEGATION = /\b(?:not|no|never|none|except|false|incorrect|cannot|least)\b/g;
const COMPARISON = /\b(?:more|less|greater|smaller|larger|fewer|most|best|worst|than|better|higher|lower)\b/g;
const STATEMENT_PAIRS = /\bstatement\s*\d|\b(?:true|false)\s*,\s*(?:true|false)\b/g;
// Line starts are read past spaces but not past line breaks (`^\s*` went on through every blank
// line from each of them): a line matches exactly when it did, and the match starts on it.
const ENUMERATED = /^[^\S\n\r\u2028\u2029]*(?:[A-Da-d]|\d{1,2}|[ivx]{1,4})[.)]\s+\S/gm;
const NUMERIC_OPTION = /^[^\S\n\r\u2028\u2029]*[A-Da-d][.)]\s*[-$]?\d/gm;
const CAPITALISED = /(?<=[a-z,;:] )[A-Z][a-z]+/g;
const PARENTHESES = /[()[\]]/g;
const QUOTES = /["“”']/g;
// Answer options, one a line: "A. text" or "b) text".
const OPTION_LINE = /^[^\S\n\r\u2028\u2029]*[A-Da-d][.)][ \t]*(.*)$/gm;
const NUMERIC_OPTION_TEXT = /^[-$−(]?\d/;
const VERDICT_PAIR = /^[A-Za-z]+(?: [a-z]+)?, ?[A-Za-z]+(?: [a-z]+)?$/;
const ROMAN_COMBINATION = /\b(?:I|II|III|IV)\b(?: only|,| and)/;
const ALL_OR_NONE = /\b(?:all|none|both|neither) of the (?:above|following)\b/i;
const NEGATED = /\b(?:not|except|least|false|incorrect)\b/;
const SELECTION = /\bwhich\b|\bfollowing\b/;
const PASSAGE = /refers to the following|following (?:passage|excerpt|information|quote)|read the following/;
// "if ... would" on one line, tried from the first "if" of each line only (as `\bif\b.*\bwould\b`
// scanned the rest of the line from every "if"): a later "if" finds no "would" the first misses.
const HYPOTHETICAL = /\bsuppose|\bassume|\bimagine|^(?:(?!\bif\b).)*\bif\b.*\bwould\b/m;
const PROOF = /\b(?:prove|proof|show that|derive|derivation|demonstrate that)\b/;
const PERSON = /\b(?:i|i'm|i've|me|my|mine|we|our|you|your|you're)\b/g;
const WHAT_WHICH = /\b(?:what|which|who|whom|whose|where|when)\b/g;
const WHY_HOW = /\b(?:why|how)\b/g;
const HOW_MANY = /\bhow (?:many|much|long|far|old|often)\b/g;

/** log(1 + x), the squashing used for counts so that no single long prompt dominates. */
const log1p = Math.log1p;

/** Words of a text, split on white space. */
const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;

/**
 * The answer options' shape, in PROMPT_FEATURE_NAMES order from `option_words` to
 * `log_distinct_stem_numbers`. Options (lines "A. ...") and the stem (the rest) are told apart
 * because how the choices look says how hard the question is in any subject: numeric choices
 * need a computation, paired verdicts ("True, False") and numeral combinations ("I and III only")
 * need several judgements at once, "which is NOT" inverts the question.
 */
function optionFeatures(head: string, lower: string): number[] {
  const options: number[] = [];
  let numeric = 0;
  let verdicts = 0;
  let roman = 0;
  let allOrNone = 0;
  OPTION_LINE.lastIndex = 0;
  for (let match = OPTION_LINE.exec(head); match !== null; match = OPTION_LINE.exec(head)) {
    const option = match[1]!.trim();
    options.push(wordCount(option));
    if (NUMERIC_OPTION_TEXT.test(option)) numeric += 1;
    if (VERDICT_PAIR.test(option)) verdicts += 1;
    if (ROMAN_COMBINATION.test(option)) roman += 1;
    if (ALL_OR_NONE.test(option)) allOrNone = 1;
  }
  const stem = head.replace(OPTION_LINE, '');
  const stemLower = stem.toLowerCase();
  const mean = options.length ? options.reduce((sum, words) => sum + words, 0) / options.length : 0;
  const spread = options.length > 1 && mean > 0 ? Math.sqrt(options.reduce((sum, words) => sum + (words - mean) ** 2, 0) / options.length) / mean : 0;
  const share = (hits: number) => (options.length ? hits / options.length : 0);
  return [
    log1p(mean) / 3,
    Math.min(2, spread),
    share(numeric),
    share(verdicts),
    share(roman),
    allOrNone,
    NEGATED.test(stemLower) && SELECTION.test(stemLower) ? 1 : 0,
    PASSAGE.test(lower) ? 1 : 0,
    HYPOTHETICAL.test(stemLower) ? 1 : 0,
    log1p(wordCount(stem)) / 6,
    log1p(new Set(stem.match(NUMBER) ?? []).size) / 3,
  ];
}

/**
 * The features of a text, in PROMPT_FEATURE_NAMES order. Counts are log-squashed and
 * shares lie in 0..1, so that the values have comparable scales before the model's standardisation.
 */
export function promptFeatures(text: string): number[] {
  const head = text.length > SCANNED_CHARACTERS ? text.slice(0, SCANNED_CHARACTERS) : text;
  const lower = head.toLowerCase();
  const words = lower.match(WORD) ?? [];
  const alphaWords = words.filter((word) => !isDigit(word.charCodeAt(0)));
  const letters = alphaWords.reduce((sum, word) => sum + word.length, 0);
  const numbers = head.match(NUMBER) ?? [];
  let digits = 0;
  for (let index = 0; index < head.length; index += 1) {
    const code = head.charCodeAt(index);
    if (code >= 48 && code <= 57) digits += 1;
  }
  const perWord = (hits: number) => Math.min(1, (hits / Math.max(4, words.length)) * 4);
  const lines = count(text, /\n/g);
  const sentences = count(head, /[.!?](?:\s|$)/g);
  return [
    1,
    log1p(text.length) / 8,
    log1p(words.length) / 6,
    log1p(lines) / 4,
    log1p(sentences) / 3,
    alphaWords.length ? letters / alphaWords.length / 10 : 0,
    alphaWords.length ? alphaWords.filter((word) => word.length >= 9).length / alphaWords.length : 0,
    head.length ? Math.min(1, (digits / head.length) * 5) : 0,
    log1p(numbers.length) / 3,
    log1p(new Set(numbers).size) / 3,
    Math.min(1, count(head, DECIMAL_OR_FRACTION) / 3),
    log1p(count(head, MATH_OPERATORS)) / 3,
    Math.min(1, count(head, MATH_NOTATION) / 3),
    Math.min(1, count(lower, EQUATION_LIKE) / 3),
    perWord(count(lower, MONEY_OR_UNIT)),
    perWord(count(lower, QUANTITY)),
    perWord(count(lower, WORD_PROBLEM)),
    log1p(count(head, /\?/g)) / 2,
    Math.min(1, count(lower, WHAT_WHICH) / 2),
    Math.min(1, count(lower, WHY_HOW) / 2),
    Math.min(1, count(lower, HOW_MANY)),
    Math.min(1, count(lower, SOLVE) / 2),
    Math.min(1, count(lower, EXPLAIN) / 2),
    Math.min(1, count(lower, WRITING) / 2),
    Math.min(1, count(lower, GREETING) / 2) * (words.length <= 30 ? 1 : 0.3),
    Math.min(1, count(head, CODE_SYNTAX) / 4),
    Math.min(1, count(lower, CODE_WORDS) / 3),
    perWord(count(lower, REASONING)),
    perWord(count(lower, CONDITIONAL)),
    perWord(count(lower, NEGATION)),
    perWord(count(lower, COMPARISON)),
    Math.min(1, count(lower, STATEMENT_PAIRS) / 2),
    log1p(count(head, ENUMERATED)) / 2,
    Math.min(1, count(head, NUMERIC_OPTION) / 4),
    alphaWords.length ? Math.min(1, (count(head, CAPITALISED) / alphaWords.length) * 4) : 0,
    log1p(count(head, PARENTHESES)) / 3,
    log1p(count(head, QUOTES)) / 3,
    perWord(count(lower, PERSON)),
    // 1 for a one-word prompt, 0 from SHORT_PROMPT_WORDS words on: the training prompts are all
    // longer, so only a hand-set prior gives this a weight (a short message rarely needs a strong model).
    Math.max(0, 1 - words.length / SHORT_PROMPT_WORDS),
    ...optionFeatures(head, lower),
    // A proof or derivation asked for: open-ended reasoning, which the training data lacks.
    PROOF.test(lower) ? 1 : 0,
  ];
}

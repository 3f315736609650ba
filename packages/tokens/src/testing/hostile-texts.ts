/**
 * Texts that the token counter's tests and its benchmark (bench/tokens.bench.ts) share: ordinary
 * prose, the hostile texts (1 MB of one letter, emoji, CJK, random code points...) and a request
 * around a text. Deterministic (seeded), so that a failure or a slow row can be replayed.
 */
import type { ChatRequest } from '@gateway/proto';

/** A request of a system message, a user message holding `text`, and one tool. */
export const request = (text: string): Pick<ChatRequest, 'messages' | 'tools'> => ({
  messages: [
    { role: 'ROLE_SYSTEM', text: 'Be brief.', tool_calls: [] },
    { role: 'ROLE_USER', text, tool_calls: [] },
  ],
  tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks a word up.', parameters_json: '{"type":"object"}' } }],
});

/** A deterministic pseudo-random source, so that a failure can be replayed. */
export function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

/** Valid UTF-16: code points anywhere in Unicode but the surrogates, mostly unassigned or rare. */
export function randomCodePoints(length: number, seed: number): string {
  const random = seededRandom(seed);
  const characters: string[] = [];
  let units = 0;
  while (units < length) {
    const codePoint = Math.floor(random() * 0x110000);
    if (codePoint >= 0xd800 && codePoint <= 0xdfff) continue;
    const character = String.fromCodePoint(codePoint);
    characters.push(character);
    units += character.length;
  }
  return characters.join('');
}

const WORDS = [
  'the',
  'gateway',
  'routes',
  'requests',
  'to',
  'models',
  'and',
  'counts',
  'their',
  'tokens',
  'before',
  'calling',
  'upstream',
  'providers',
  'with',
  'retries',
  'quickly',
  'because',
  'latency',
  'matters',
];

/** English-like sentences of at least `length` characters; a shorter one is a prefix of a longer one of the same seed. */
export function prose(length: number, seed: number): string {
  const random = seededRandom(seed);
  const sentences: string[] = [];
  let size = 0;
  while (size < length) {
    const words = Array.from({ length: 5 + Math.floor(random() * 12) }, () => WORDS[Math.floor(random() * WORDS.length)]!);
    const sentence = `${words.join(' ')}${['.', ',', '!', '?', ':'][Math.floor(random() * 5)]}${random() < 0.1 ? '\n\n' : ' '}`;
    sentences.push(sentence.charAt(0).toUpperCase() + sentence.slice(1));
    size += sentence.length;
  }
  return sentences.join('');
}

/** 2^20 UTF-16 code units. */
export const MEGABYTE = 1 << 20;

/** Distinct CJK characters, none repeated often enough for the tokenizer's cache to help. */
function randomCjk(length: number, seed: number): string {
  const random = seededRandom(seed);
  return Array.from({ length }, () => String.fromCharCode(0x4e00 + Math.floor(random() * 20_000))).join('');
}

/** The hostile texts, 1 MB (2^20 UTF-16 code units) each. */
export const HOSTILE: Record<string, string> = {
  'one letter': 'A'.repeat(MEGABYTE),
  emoji: '😀'.repeat(MEGABYTE / 2),
  'one CJK character': '中'.repeat(MEGABYTE),
  'distinct CJK characters (256K)': randomCjk(MEGABYTE / 4, 11),
  'random code points': randomCodePoints(MEGABYTE, 7),
  spaces: ' '.repeat(MEGABYTE),
  'one symbol': '!'.repeat(MEGABYTE),
  'symbol then slashes and line breaks': `!${'/\n'.repeat(MEGABYTE / 2)}`,
  'combining marks': `a${'\u0301'.repeat(MEGABYTE)}`,
};

/**
 * Texts whose every piece misses gpt-tokenizer's merge cache cost it 1 to 2 µs a character
 * however they are cut (1 MB of distinct CJK: 2.3 s, of random code points: 1.3 s), linear but
 * over the 1 s target of a whole count; the edge counts them only up to a context window, which
 * stays under it.
 */
export const COSTLY_PER_CHARACTER = new Set(['distinct CJK characters (256K)', 'random code points']);

/** A conversation of 5,000 messages of 150 to 250 characters of prose, one in 50 with 200 emoji. */
export function longConversation() {
  const random = seededRandom(3);
  const messages = Array.from({ length: 5_000 }, (_, index) => ({
    role: index % 2 === 0 ? ('ROLE_USER' as const) : ('ROLE_ASSISTANT' as const),
    text: `${prose(150 + Math.floor(random() * 100), index)}${index % 50 === 0 ? '😀'.repeat(200) : ''}`,
    tool_calls: [],
  }));
  return { messages, tools: [] } satisfies Pick<ChatRequest, 'messages' | 'tools'>;
}

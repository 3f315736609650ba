import { describe, expect, it } from 'vitest';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import type { ChatRequest } from '@gateway/proto';
import {
  countPromptTokens,
  countPromptTokensAsync,
  countPromptTokensWithin,
  countPromptTokensWithinAsync,
  countTextTokens,
  countTextTokensAsync,
  LONG_RUN_CHARACTERS,
  promptTokenBounds,
  tokenPieces,
  tokenPiecesAsync,
  tokenPrefix,
} from './index.js';

const request = (text: string): Pick<ChatRequest, 'messages' | 'tools'> => ({
  messages: [
    { role: 'ROLE_SYSTEM', text: 'Be brief.', tool_calls: [] },
    { role: 'ROLE_USER', text, tool_calls: [] },
  ],
  tools: [{ type: 'function', function: { name: 'lookup', description: 'Looks a word up.', parameters_json: '{"type":"object"}' } }],
});

/** A deterministic pseudo-random source, so that a failure can be replayed. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32;
  };
}

/** Valid UTF-16: code points anywhere in Unicode but the surrogates, mostly unassigned or rare. */
function randomCodePoints(length: number, seed: number): string {
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

function prose(length: number, seed: number): string {
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

const CODE = `export async function retry<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    try { return await work(); } catch (error) { lastError = error; await new Promise((resolve) => setTimeout(resolve, 2 ** attempt * 100)); }
  }
  throw lastError; // every attempt failed
}
`;

const record = (index: number) => ({
  id: `req_${index.toString(36)}`,
  model: 'gpt-4o-mini',
  usage: { prompt_tokens: index * 7, completion_tokens: index % 97 },
  tags: ['a', 'β', '中文'],
  ok: index % 3 === 0,
  ratio: index / 7,
});

const MULTILINGUAL = [
  '小明买了15支铅笔和4本笔记本，他应该找回多少钱？请一步一步地解释。',
  'Напишите функцию на Python, которая объединяет пересекающиеся интервалы.',
  'これはテストです。東京の天気は晴れ、気温は２３度です。',
  'مرحبا بالعالم، كيف حالك اليوم؟',
  'नमस्ते दुनिया, आज मौसम बहुत अच्छा है।',
  'Ο Σωκράτης ήταν Αθηναίος φιλόσοφος 👋🏽 — Grüße aus Köln! Ça va? 🎉🎉',
  '한국어 문장도 포함합니다. 숫자 12345와 함께.',
].join('\n');

const MEGABYTE = 1 << 20;

/** Distinct CJK characters, none repeated often enough for the tokenizer's cache to help. */
function randomCjk(length: number, seed: number): string {
  const random = seededRandom(seed);
  return Array.from({ length }, () => String.fromCharCode(0x4e00 + Math.floor(random() * 20_000))).join('');
}

/** The hostile texts of the brief, 1 MB (2^20 UTF-16 code units) each. */
const HOSTILE: Record<string, string> = {
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
 * over the 1 s bound of a whole count; the edge counts them only up to a context window, which
 * stays under it.
 */
const COSTLY_PER_CHARACTER = new Set(['distinct CJK characters (256K)', 'random code points']);

/** Milliseconds a call takes. */
function timed<T>(work: () => T): { result: T; milliseconds: number } {
  const start = performance.now();
  const result = work();
  return { result, milliseconds: performance.now() - start };
}

/** The longest the event loop went without a turn (probed by a 1 ms interval) while `work` ran. */
async function longestLoopGap(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(probe);
  }
  return Math.max(longest, performance.now() - last);
}

describe('countPromptTokensWithin', { timeout: 30_000 }, () => {
  it('counts exactly as countPromptTokens up to the limit, and stops past it', () => {
    const prompt = request('The quick brown fox jumps over the lazy dog. '.repeat(50));
    const total = countPromptTokens(prompt);
    expect(total).toBeGreaterThan(500);
    expect(countPromptTokensWithin(prompt, total)).toBe(total);
    expect(countPromptTokensWithin(prompt, total + 1_000)).toBe(total);
    expect(countPromptTokensWithin(prompt, total - 1)).toBeUndefined();
    expect(countPromptTokensWithin(prompt, 5)).toBeUndefined();
  });

  it('stops within a segment of the limit: a 16 MB prompt over a small limit costs no more than a small one', () => {
    const huge = request(prose(16 * MEGABYTE, 1));
    const { result, milliseconds } = timed(() => countPromptTokensWithin(huge, 1_000));
    expect(result).toBeUndefined();
    expect(milliseconds).toBeLessThan(100);
  });
});

describe('promptTokenBounds', { timeout: 30_000 }, () => {
  it('never counts fewer tokens than the tokenizer as an upper bound, whatever the text', () => {
    const random = seededRandom(7);
    const samples = [
      prose(20_000, 3),
      CODE.repeat(20),
      MULTILINGUAL.repeat(30),
      '😀🚀👍🏽'.repeat(500),
      '<|endoftext|>'.repeat(50),
      'a'.repeat(5_000),
      Array.from({ length: 4_000 }, () => String.fromCodePoint(Math.floor(random() * 0x2ffff)))
        .join('')
        .replace(/[\ud800-\udfff]/g, ''),
    ];
    for (const text of samples) {
      const prompt = {
        ...request(text),
        messages: [
          ...(request(text).messages ?? []),
          {
            role: 'ROLE_ASSISTANT' as const,
            text: '',
            name: 'helper',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: text.slice(0, 300) } }],
          },
        ],
      };
      const exact = countPromptTokens(prompt);
      const bounds = promptTokenBounds(prompt);
      expect(bounds.upper).toBeGreaterThanOrEqual(exact);
      expect(bounds.estimate).toBeLessThanOrEqual(bounds.upper);
    }
  });

  it('estimates prose, code and other scripts from bytes alone, at most a third under and twice over the exact count', () => {
    for (const text of [prose(40_000, 5), CODE.repeat(40), MULTILINGUAL.repeat(40)]) {
      const exact = countPromptTokens(request(text));
      const { estimate } = promptTokenBounds(request(text));
      expect(estimate / exact).toBeGreaterThan(0.67);
      expect(estimate / exact).toBeLessThan(2);
    }
  });
});

describe('exact counts for ordinary text', { timeout: 30_000 }, () => {
  const texts: Record<string, string> = {
    prose: prose(200_000, 2),
    code: CODE.repeat(300),
    'JSON, indented': JSON.stringify(
      Array.from({ length: 600 }, (_, index) => record(index)),
      null,
      2,
    ),
    'JSON, minified': JSON.stringify(Array.from({ length: 1_500 }, (_, index) => record(index))),
    multilingual: MULTILINGUAL.repeat(400),
    'a short message': 'hi, how are you?',
    'rules, indentation, a Thai phrase and a long identifier':
      `${'-'.repeat(80)}\n${' '.repeat(120)}{}\n${'ภาษาไทยเป็นภาษาที่ไม่มีการเว้นวรรคระหว่างคำ'.repeat(4)} ${'veryLong'.repeat(20)}Identifier\n${'='.repeat(200)}\n`.repeat(
        50,
      ),
    'special tokens as text': 'Say <|endoftext|> and <|im_start|> literally.',
  };

  for (const [name, text] of Object.entries(texts)) {
    it(`equals gpt-tokenizer's count on ${name}, whole or cut into pieces`, async () => {
      const expected = countTokens(text, { disallowedSpecial: new Set() });
      expect(countTextTokens(text)).toBe(expected);
      expect(await countTextTokensAsync(text)).toBe(expected);
      const pieces = tokenPieces(text);
      expect(pieces.join('')).toBe(text);
      expect(tokenPrefix(text).tokens).toBe(expected);
      const prompt = request(text);
      expect(countPromptTokens(prompt)).toBe(expected + countPromptTokens(request('')));
    });
  }
});

describe('hostile text', { timeout: 30_000 }, () => {
  for (const [name, text] of Object.entries(HOSTILE)) {
    it(`counts 1 MB of ${name} in linear time, the same synchronously and in time slices`, async () => {
      const counted = timed(() => countTextTokens(text));
      expect(counted.milliseconds).toBeLessThan(COSTLY_PER_CHARACTER.has(name) ? 6_000 : 1_000);
      expect(counted.result).toBeGreaterThan(0);

      const prompt = request(text);
      const refused = timed(() => countPromptTokensWithin(prompt, 200_000));
      expect(refused.milliseconds).toBeLessThan(1_000);
      const total = countPromptTokens(request('')) + counted.result;
      expect(refused.result).toBe(total <= 200_000 ? total : undefined);

      let asyncCount = 0;
      const gap = await longestLoopGap(async () => {
        asyncCount = await countTextTokensAsync(text);
      });
      expect(asyncCount).toBe(counted.result);
      expect(gap).toBeLessThan(50);
      expect(await countPromptTokensWithinAsync(prompt, 200_000)).toBe(refused.result);
    });

    it(`cuts 1 MB of ${name} into token pieces that join back to it`, async () => {
      const pieces = timed(() => tokenPieces(text));
      expect(pieces.milliseconds).toBeLessThan(COSTLY_PER_CHARACTER.has(name) ? 6_000 : 1_000);
      expect(pieces.result.join('')).toBe(text);
      expect(await tokenPiecesAsync(text)).toEqual(pieces.result);
    });
  }

  it("stays within a token per cut of gpt-tokenizer's own count of a long run", () => {
    // Short enough for gpt-tokenizer's quadratic merge to count them whole.
    for (const text of ['A'.repeat(5_000), '😀'.repeat(2_500), '中'.repeat(5_000), ' '.repeat(5_000), `Separator:\n${'-'.repeat(5_000)}\n`]) {
      const exact = countTokens(text);
      expect(Math.abs(countTextTokens(text) - exact)).toBeLessThanOrEqual(Math.ceil(text.length / LONG_RUN_CHARACTERS));
    }
  });

  it('counts a request of 5,000 messages quickly, and refuses it past the limit at once', async () => {
    const random = seededRandom(3);
    const messages = Array.from({ length: 5_000 }, (_, index) => ({
      role: index % 2 === 0 ? ('ROLE_USER' as const) : ('ROLE_ASSISTANT' as const),
      text: `${prose(150 + Math.floor(random() * 100), index)}${index % 50 === 0 ? '😀'.repeat(200) : ''}`,
      tool_calls: [],
    }));
    const prompt: Pick<ChatRequest, 'messages' | 'tools'> = { messages, tools: [] };
    const counted = timed(() => countPromptTokens(prompt));
    expect(counted.milliseconds).toBeLessThan(1_000);
    expect(counted.result).toBe(3 + messages.reduce((sum, message) => sum + 4 + countTextTokens(message.text), 0));
    expect(countPromptTokensWithin(prompt, counted.result)).toBe(counted.result);

    const refused = timed(() => countPromptTokensWithin(prompt, 20_000));
    expect(refused.result).toBeUndefined();
    expect(refused.milliseconds).toBeLessThan(counted.milliseconds);

    let asyncCount = 0;
    const gap = await longestLoopGap(async () => {
      asyncCount = await countPromptTokensAsync(prompt);
    });
    expect(asyncCount).toBe(counted.result);
    expect(gap).toBeLessThan(50);
    expect(await countPromptTokensWithinAsync(prompt, 20_000)).toBeUndefined();
  });
});

describe('time slices', () => {
  it('gives the event loop no turn for a small input, and turns for a big one', async () => {
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    // Under SMALL_INPUT_BYTES each, however long they take.
    await countPromptTokensWithinAsync(request('A typical prompt. '.repeat(400)), 128_000);
    await countTextTokensAsync('😀'.repeat(2_000));
    expect(turned).toBe(false);

    await countTextTokensAsync(HOSTILE['one CJK character']!);
    expect(turned).toBe(true);
  });
});

describe('tokenPrefix', () => {
  it('stops at the budget, on a whole piece, and says whether the text was complete', () => {
    const text = 'The gateway routes each request to a model. '.repeat(10);
    const all = tokenPrefix(text);
    expect(all.complete).toBe(true);
    expect(all.tokens).toBe(countTextTokens(text));
    const cut = tokenPrefix(text, 7);
    expect(cut).toEqual({ pieces: all.pieces.slice(0, 7), tokens: 7, complete: false });
    expect(countTextTokens(cut.pieces.join(''))).toBe(7);
  });

  it('keeps the tokens of a split character together, so every piece is valid text', () => {
    // U+1F9EC (DNA) is three o200k tokens: none is a whole character on its own.
    const text = '🧬 is DNA';
    const { pieces, tokens } = tokenPrefix(text);
    expect(pieces.join('')).toBe(text);
    expect(tokens).toBe(countTokens(text));
    expect(pieces.every((piece) => !piece.includes('\uFFFD'))).toBe(true);
  });
});
